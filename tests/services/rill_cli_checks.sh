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

# shellcheck source=tests/services/cli_checks_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cli_checks_lib.sh" "$@"

ts=grpc.testing.TestService

run ls "$target"
[ $rc -eq 0 ] && has "$out" "$ts" && has "$out" "grpc.reflection.v1alpha.ServerReflection"
check ls

run ls -l "$target" "$ts"
[ $rc -eq 0 ] && has "$out" \
  "rpc FullDuplexCall(stream grpc.testing.StreamingOutputCallRequest) returns (stream grpc.testing.StreamingOutputCallResponse);"
check ls_methods

# Every type of every method resolves.
types=$(sed -n 's/^rpc [A-Za-z]*(\(stream \)\{0,1\}\([^)]*\)) returns (\(stream \)\{0,1\}\([^)]*\));$/\2 \4/p' <<<"$out" | tr ' ' '\n' | sort -u)
all_described=true
count=0
for type in $types; do
  run describe "$target" "$type"
  if [ $rc -ne 0 ] || ! has "$out" "message "; then all_described=false; break; fi
  count=$((count + 1))
done
$all_described
check "describe_every_type ($count types)"
[ "$count" -ge 6 ] || { echo "FAIL describe_every_type: only $count types"; failed=1; }

run describe "$target" grpc.testing.SimpleRequest
[ $rc -eq 0 ] && has "$out" "int32 response_size = 2;"
check describe_message
run describe "$target" "$ts/StreamingInputCall"
[ $rc -eq 0 ] && has "$out" \
  "rpc StreamingInputCall(stream grpc.testing.StreamingInputCallRequest) returns (grpc.testing.StreamingInputCallResponse);"
check describe_method

run call "$target" "$ts/UnaryCall" '{"responseSize": 3}'
[ $rc -eq 0 ] && [ "$(compact "$out")" = '{"payload":{"body":"AAAA"}}' ]
check call_unary

run call "$target" "$ts.EmptyCall"
[ $rc -eq 0 ] && [ "$(compact "$out")" = '{}' ]
check call_empty_request

run call "$target" "$ts/StreamingOutputCall" '{"responseParameters": [{"size": 2}, {"size": 1}]}'
[ $rc -eq 0 ] && \
  [ "$(compact "$out")" = '{"payload":{"body":"AAA="}}{"payload":{"body":"AA=="}}' ]
check call_server_streaming

run call "$target" "$ts/StreamingInputCall" '{"payload": {"body": "YWJj"}} {"payload": {"body": "ZA=="}}'
[ $rc -eq 0 ] && [ "$(compact "$out")" = '{"aggregatedPayloadSize":4}' ]
check call_client_streaming

data=$(mktemp)
printf '%s\n%s\n' '{"responseParameters": [{"size": 1}]}' '{"responseParameters": [{"size": 2}]}' >"$data"
run call -v -H 'x-grpc-test-echo-initial: from-rill-cli' "$target" "$ts/FullDuplexCall" "@$data"
[ $rc -eq 0 ] && \
  [ "$(compact "$out")" = '{"payload":{"body":"AA=="}}{"payload":{"body":"AAA="}}' ] && \
  has "$err" "header x-grpc-test-echo-initial: from-rill-cli"
check call_bidi_from_file_with_metadata
run call "$target" "$ts/FullDuplexCall" @- <"$data"
[ $rc -eq 0 ] && \
  [ "$(compact "$out")" = '{"payload":{"body":"AA=="}}{"payload":{"body":"AAA="}}' ]
check call_bidi_from_stdin
rm -f "$data"

# Failures: readable message on stderr, exit code by kind.
run call --deadline 0.3 "$target" "$ts/StreamingOutputCall" \
  '{"responseParameters": [{"size": 1, "intervalUs": 3000000}]}'
[ $rc -eq 68 ] && has "$err" "DEADLINE_EXCEEDED"
check deadline_exceeded
run call "$target" "$ts/UnimplementedCall"
[ $rc -eq 76 ] && has "$err" "UNIMPLEMENTED"
check unimplemented
run call "$target" "$ts/UnaryCall" '{"responseStatus": {"code": 9, "message": "no way"}}'
[ $rc -eq 73 ] && has "$err" "FAILED_PRECONDITION: no way"
check server_status
run call "$target" "$ts/NoSuchMethod"
[ $rc -eq 2 ] && has "$err" "NoSuchMethod" && has "$err" "not found"
check unknown_method
run call "$target" no.such.Service/Method
[ $rc -eq 2 ] && has "$err" "no.such.Service not found"
check unknown_service
run describe "$target" no.such.Symbol
[ $rc -eq 2 ] && has "$err" "NOT_FOUND"
check unknown_symbol
run call "$target" "$ts/UnaryCall" '{"responseSize": "three"}'
[ $rc -eq 2 ] && has "$err" "is not a grpc.testing.SimpleRequest"
check bad_json_value
run call "$target" "$ts/UnaryCall" '{"responseSize": 3'
[ $rc -eq 2 ] && has "$err" "not terminated"
check unterminated_json
run call "$target" "$ts/UnaryCall" '{} {}'
[ $rc -eq 2 ] && has "$err" "takes one request"
check two_requests_for_unary
run ls 127.0.0.1:1
[ $rc -eq 78 ] && has "$err" "UNAVAILABLE"
check unreachable
run frobnicate "$target"
[ $rc -eq 2 ]
check bad_command

if [ "$flavor" = rill ]; then
  run health "$target"
  [ $rc -eq 0 ] && [ "$out" = SERVING ]
  check health
  run health "$target" "$ts"
  [ $rc -eq 0 ] && [ "$out" = SERVING ]
  check health_service
  run health "$target" no.such.Service
  [ $rc -eq 69 ] && has "$err" "NOT_FOUND"
  check health_unknown_service
else
  run health "$target"
  [ $rc -eq 76 ] && has "$err" "UNIMPLEMENTED"
  check health_not_served
fi

exit $failed
