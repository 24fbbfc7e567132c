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

cli=""
server=""
certs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cli) cli=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --certs) certs=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ -x "$cli" ] || { echo "FAIL: rill_cli not found at '$cli'"; exit 1; }
[ -x "$server" ] || { echo "FAIL: rill_interop_server not found at '$server'"; exit 1; }

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

"$server" --port=0 --use_tls=true --tls_cert_file="$certs/server.pem" \
  --tls_key_file="$certs/server.key" --tls_client_ca_file="$certs/ca.pem" \
  >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
port=""
for _ in $(seq 200); do
  port=$(sed -n 's/^listening on \([0-9]*\)$/\1/p' "$work/server.out")
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.05
done
if [ -z "$port" ]; then
  echo "FAIL: the server did not start"
  cat "$work/server.out" "$work/server.err"
  exit 1
fi
target=127.0.0.1:$port

failed=0
out=""
err=""
rc=0
run() {
  "$cli" "$@" >"$work/out" 2>"$work/err"
  rc=$?
  out=$(cat "$work/out")
  err=$(cat "$work/err")
}
check() {  # check NAME CONDITION...
  local name=$1
  shift
  if "$@"; then
    echo "PASS $name"
  else
    echo "FAIL $name (exit $rc)"
    echo "  stdout: $out"
    echo "  stderr: $err"
    failed=1
  fi
}
has() { [[ "$1" == *"$2"* ]]; }

ts=grpc.testing.TestService
mtls=(--cacert "$certs/ca.pem" --cert "$certs/client.pem" --key "$certs/client.key")

# The server's certificate names 127.0.0.1 (and *.test.rill): verified against the test CA.
run "${mtls[@]}" ls "$target"
check "ls over mutual TLS" [ $rc -eq 0 ] && has "$out" "$ts" && has "$out" "grpc.channelz.v1.Channelz"

run "${mtls[@]}" call "$target" "$ts/UnaryCall" '{"responseSize": 3}'
check "call over mutual TLS" [ $rc -eq 0 ] && has "$out" '"body": "AAAA"'

run "${mtls[@]}" --server-name foo.test.rill call "$target" "$ts.EmptyCall"
check "call with a server name override" [ $rc -eq 0 ] && has "$out" "{}"

run "${mtls[@]}" health "$target"
check "health over mutual TLS" [ $rc -eq 0 ] && has "$out" "SERVING"

# Failures a user meets: exit 64 + UNAVAILABLE (14) with the reason, or a usage error.
run "${mtls[@]}" --server-name wrong.example ls "$target"
check "a name the certificate lacks is refused" [ $rc -eq 78 ] && has "$err" "UNAVAILABLE"

run --cacert "$certs/ca.pem" ls "$target"
check "no client certificate: the server refuses" [ $rc -eq 78 ]

run --cacert "$certs/other_ca.pem" --cert "$certs/client.pem" --key "$certs/client.key" ls "$target"
check "a server from another CA is refused" [ $rc -eq 78 ] && has "$err" "UNAVAILABLE"

run ls "$target"
check "plaintext to a TLS port fails" [ $rc -eq 78 ]

run --cacert "$certs/ca.pem" --cert "$certs/client.pem" ls "$target"
check "--cert without --key is a usage error" [ $rc -eq 2 ] && has "$err" "--key"

run --cacert "$work/missing.pem" ls "$target"
check "a missing CA file is a usage error" [ $rc -eq 2 ] && has "$err" "--cacert"

exit $failed
