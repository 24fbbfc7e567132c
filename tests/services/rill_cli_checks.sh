#!/usr/bin/env bash
# rill_cli against a running grpc.testing.TestService server with reflection (rill's interop
# server, or libgrpc++'s with its own reflection): listing, describing, calls of every streaming
# kind with JSON input, metadata, deadlines, and the exit codes of failures.
#
#   rill_cli_checks.sh --cli build/test/tools/rill_cli/rill_cli --target 127.0.0.1:50051 \
#       --flavor rill|grpcpp
#
# --flavor rill also checks the health service (which the libgrpc++ peer does not serve).
# Prints PASS/FAIL per check; exits 1 if any failed.
set -uo pipefail

cli=""
target=""
flavor=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cli) cli=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --flavor) flavor=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ -x "$cli" ] || { echo "FAIL: rill_cli not found at '$cli'"; exit 1; }

failed=0
out=""
err=""
rc=0
# run ARGS...: runs rill_cli, keeping stdout, stderr and the exit code.
run() {
  local o e
  o=$(mktemp)
  e=$(mktemp)
  "$cli" "$@" >"$o" 2>"$e"
  rc=$?
  out=$(cat "$o")
  err=$(cat "$e")
  rm -f "$o" "$e"
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
compact() { tr -d ' \n' <<<"$1"; }

ts=grpc.testing.TestService

run ls "$target"
check ls [ $rc -eq 0 ] && has "$out" "$ts" && has "$out" "grpc.reflection.v1alpha.ServerReflection"

run ls -l "$target" "$ts"
check ls_methods [ $rc -eq 0 ] && has "$out" \
  "rpc FullDuplexCall(stream grpc.testing.StreamingOutputCallRequest) returns (stream grpc.testing.StreamingOutputCallResponse);"

# Every type of every method resolves.
types=$(sed -n 's/^rpc [A-Za-z]*(\(stream \)\{0,1\}\([^)]*\)) returns (\(stream \)\{0,1\}\([^)]*\));$/\2 \4/p' <<<"$out" | tr ' ' '\n' | sort -u)
all_described=true
count=0
for type in $types; do
  run describe "$target" "$type"
  if [ $rc -ne 0 ] || ! has "$out" "message "; then all_described=false; break; fi
  count=$((count + 1))
done
check "describe_every_type ($count types)" $all_described
[ "$count" -ge 6 ] || { echo "FAIL describe_every_type: only $count types"; failed=1; }

run describe "$target" grpc.testing.SimpleRequest
check describe_message [ $rc -eq 0 ] && has "$out" "int32 response_size = 2;"
run describe "$target" "$ts/StreamingInputCall"
check describe_method [ $rc -eq 0 ] && has "$out" \
  "rpc StreamingInputCall(stream grpc.testing.StreamingInputCallRequest) returns (grpc.testing.StreamingInputCallResponse);"

run call "$target" "$ts/UnaryCall" '{"responseSize": 3}'
check call_unary [ $rc -eq 0 ] && [ "$(compact "$out")" = '{"payload":{"body":"AAAA"}}' ]

run call "$target" "$ts.EmptyCall"
check call_empty_request [ $rc -eq 0 ] && [ "$(compact "$out")" = '{}' ]

run call "$target" "$ts/StreamingOutputCall" '{"responseParameters": [{"size": 2}, {"size": 1}]}'
check call_server_streaming [ $rc -eq 0 ] && \
  [ "$(compact "$out")" = '{"payload":{"body":"AAA="}}{"payload":{"body":"AA=="}}' ]

run call "$target" "$ts/StreamingInputCall" '{"payload": {"body": "YWJj"}} {"payload": {"body": "ZA=="}}'
check call_client_streaming [ $rc -eq 0 ] && [ "$(compact "$out")" = '{"aggregatedPayloadSize":4}' ]

data=$(mktemp)
printf '%s\n%s\n' '{"responseParameters": [{"size": 1}]}' '{"responseParameters": [{"size": 2}]}' >"$data"
run call -v -H 'x-grpc-test-echo-initial: from-rill-cli' "$target" "$ts/FullDuplexCall" "@$data"
check call_bidi_from_file_with_metadata [ $rc -eq 0 ] && \
  [ "$(compact "$out")" = '{"payload":{"body":"AA=="}}{"payload":{"body":"AAA="}}' ] && \
  has "$err" "header x-grpc-test-echo-initial: from-rill-cli"
run call "$target" "$ts/FullDuplexCall" @- <"$data"
check call_bidi_from_stdin [ $rc -eq 0 ] && \
  [ "$(compact "$out")" = '{"payload":{"body":"AA=="}}{"payload":{"body":"AAA="}}' ]
rm -f "$data"

# Failures: readable message on stderr, exit code by kind.
run call --deadline 0.3 "$target" "$ts/StreamingOutputCall" \
  '{"responseParameters": [{"size": 1, "intervalUs": 3000000}]}'
check deadline_exceeded [ $rc -eq 68 ] && has "$err" "DEADLINE_EXCEEDED"
run call "$target" "$ts/UnimplementedCall"
check unimplemented [ $rc -eq 76 ] && has "$err" "UNIMPLEMENTED"
run call "$target" "$ts/UnaryCall" '{"responseStatus": {"code": 9, "message": "no way"}}'
check server_status [ $rc -eq 73 ] && has "$err" "FAILED_PRECONDITION: no way"
run call "$target" "$ts/NoSuchMethod"
check unknown_method [ $rc -eq 2 ] && has "$err" "NoSuchMethod" && has "$err" "not found"
run call "$target" no.such.Service/Method
check unknown_service [ $rc -eq 2 ] && has "$err" "no.such.Service not found"
run describe "$target" no.such.Symbol
check unknown_symbol [ $rc -eq 2 ] && has "$err" "NOT_FOUND"
run call "$target" "$ts/UnaryCall" '{"responseSize": "three"}'
check bad_json_value [ $rc -eq 2 ] && has "$err" "is not a grpc.testing.SimpleRequest"
run call "$target" "$ts/UnaryCall" '{"responseSize": 3'
check unterminated_json [ $rc -eq 2 ] && has "$err" "not terminated"
run call "$target" "$ts/UnaryCall" '{} {}'
check two_requests_for_unary [ $rc -eq 2 ] && has "$err" "takes one request"
run ls 127.0.0.1:1
check unreachable [ $rc -eq 78 ] && has "$err" "UNAVAILABLE"
run frobnicate "$target"
check bad_command [ $rc -eq 2 ]

if [ "$flavor" = rill ]; then
  run health "$target"
  check health [ $rc -eq 0 ] && [ "$out" = SERVING ]
  run health "$target" "$ts"
  check health_service [ $rc -eq 0 ] && [ "$out" = SERVING ]
  run health "$target" no.such.Service
  check health_unknown_service [ $rc -eq 69 ] && has "$err" "NOT_FOUND"
else
  run health "$target"
  check health_not_served [ $rc -eq 76 ] && has "$err" "UNIMPLEMENTED"
fi

exit $failed
