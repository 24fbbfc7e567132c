#!/usr/bin/env bash
# rill_cli over TLS against rill_interop_server serving TLS that requires client certificates
# (mutual TLS, certificates from tests/tls/certs): ls, call and health with the CA, the client
# key pair and a server name override, and the failures a user meets without them.
#
#   rill_cli_tls_checks.sh --cli build/test/tools/rill_cli/rill_cli \
#       --server build/test/tests/interop/rill_interop_server --certs tests/tls/certs
#
# Prints PASS/FAIL per check; exits 1 if any failed.
set -uo pipefail

# shellcheck source=tests/services/cli_checks_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cli_checks_lib.sh" "$@"
[ -x "$server" ] || { echo "FAIL: rill_interop_server not found at '$server'"; exit 1; }

start_server "$server" --port=0 --use_tls=true --tls_cert_file="$certs/server.pem" \
  --tls_key_file="$certs/server.key" --tls_client_ca_file="$certs/ca.pem"
target=127.0.0.1:$port

ts=grpc.testing.TestService
mtls=(--cacert "$certs/ca.pem" --cert "$certs/client.pem" --key "$certs/client.key")

# The server's certificate names 127.0.0.1 (and *.test.rill): verified against the test CA.
run "${mtls[@]}" ls "$target"
[ $rc -eq 0 ] && has "$out" "$ts" && has "$out" "grpc.channelz.v1.Channelz"
check "ls over mutual TLS"

run "${mtls[@]}" call "$target" "$ts/UnaryCall" '{"responseSize": 3}'
[ $rc -eq 0 ] && has "$out" '"body": "AAAA"'
check "call over mutual TLS"

run "${mtls[@]}" --server-name foo.test.rill call "$target" "$ts.EmptyCall"
[ $rc -eq 0 ] && has "$out" "{}"
check "call with a server name override"

run "${mtls[@]}" health "$target"
[ $rc -eq 0 ] && has "$out" "SERVING"
check "health over mutual TLS"

# Failures a user meets: exit 64 + UNAVAILABLE (14) with the reason, or a usage error.
run "${mtls[@]}" --server-name wrong.example ls "$target"
[ $rc -eq 78 ] && has "$err" "UNAVAILABLE"
check "a name the certificate lacks is refused"

run --cacert "$certs/ca.pem" ls "$target"
[ $rc -eq 78 ]
check "no client certificate: the server refuses"

run --cacert "$certs/other_ca.pem" --cert "$certs/client.pem" --key "$certs/client.key" ls "$target"
[ $rc -eq 78 ] && has "$err" "UNAVAILABLE"
check "a server from another CA is refused"

run ls "$target"
[ $rc -eq 78 ]
check "plaintext to a TLS port fails"

run --cacert "$certs/ca.pem" --cert "$certs/client.pem" ls "$target"
[ $rc -eq 2 ] && has "$err" "--key"
check "--cert without --key is a usage error"

run --cacert "$work/missing.pem" ls "$target"
[ $rc -eq 2 ] && has "$err" "--cacert"
check "a missing CA file is a usage error"

exit $failed
