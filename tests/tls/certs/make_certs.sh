#!/usr/bin/env bash
# Makes the TLS test certificates in this directory (committed; rerun only to replace them):
#   ca.pem / ca.key              the rill test CA
#   server.pem / server.key      signed by it; valid for localhost, 127.0.0.1, ::1,
#                                *.test.google.fr (the interop programs' default override name)
#                                and *.test.rill
#   client.pem / client.key      signed by it; a client certificate for mutual TLS
#   other_ca.pem / other_ca.key  an unrelated CA (a client trusting only it rejects server.pem)
#   expired.pem / expired.key    signed by the test CA, valid only during January 2020
# Keys are EC P-256; everything but the expired certificate is valid for 10000 days.
set -euo pipefail
cd "$(dirname "$0")"
days=10000
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

make_ca() {  # name subject
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days "$days" -subj "$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$1.pem"
}

make_leaf() {  # name subject extensions-file-section-text
  key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -out "$work/$1.csr"
  printf '%s\n' "$3" > "$work/$1.ext"
  openssl x509 -req -in "$work/$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
    -CAserial "$work/ca.srl" -sha256 -days "$days" -extfile "$work/$1.ext" -out "$1.pem"
}

make_ca ca "/O=rill test/CN=rill test CA"
make_ca other_ca "/O=rill test/CN=unrelated test CA"
make_leaf server "/O=rill test/CN=localhost" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1,DNS:*.test.google.fr,DNS:*.test.rill"
make_leaf client "/O=rill test/CN=rill test client" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
subjectAltName=DNS:client.test.rill,URI:spiffe://test.rill/client"

# The expired certificate: `openssl ca` takes explicit start and end dates.
key expired.key
openssl req -new -key expired.key -subj "/O=rill test/CN=localhost" -out "$work/expired.csr"
mkdir -p "$work/db"
: > "$work/db/index.txt"
echo 1000 > "$work/db/serial"
cat > "$work/ca.cnf" <<CNF
[ca]
default_ca = test
[test]
database = $work/db/index.txt
serial = $work/db/serial
new_certs_dir = $work/db
default_md = sha256
policy = any
copy_extensions = none
x509_extensions = leaf
[any]
organizationName = optional
commonName = supplied
[leaf]
basicConstraints = CA:FALSE
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1,IP:::1,DNS:*.test.google.fr,DNS:*.test.rill
CNF
openssl ca -batch -config "$work/ca.cnf" -cert ca.pem -keyfile ca.key -in "$work/expired.csr" \
  -startdate 20200101000000Z -enddate 20200131000000Z -notext -out expired.pem 2>/dev/null
chmod 644 ./*.key
