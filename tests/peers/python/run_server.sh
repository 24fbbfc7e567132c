#!/usr/bin/env bash
# Runs the grpcio interop server: generates the message modules it needs from grpc-proto's
# grpc/testing into a temporary directory (as run_client.sh does), then runs interop_server.py
# with Debian's python. Arguments go to the server unchanged; SIGTERM and SIGINT are passed on
# to it, and the script exits with its status.
#
#   tests/peers/python/run_server.sh --port=0 --use_tls=false
#
# PEER_PYTHON overrides the interpreter; RILL_GRPC_PROTO_ROOT the grpc-proto root (default
# /usr/share/grpc-proto, Debian's grpc-proto package).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
testing_protos="${RILL_GRPC_PROTO_ROOT:-/usr/share/grpc-proto}/grpc/testing"
python="${PEER_PYTHON:-/usr/bin/python3}"

gen="$(mktemp -d)"
trap 'rm -rf "$gen"' EXIT

# Top-level `empty_pb2` and `messages_pb2`: see run_client.sh.
protoc -I"$testing_protos" --python_out="$gen" "$testing_protos/empty.proto" \
  "$testing_protos/messages.proto"

PYTHONPATH="$gen${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
  "$python" "$here/interop_server.py" "$@" &
server=$!
# bash runs a trap only after the child it waits for exits: wait in the background's stead.
trap 'kill -TERM "$server" 2>/dev/null || true' TERM INT
status=0
wait "$server" || status=$?
# A signal interrupted the first wait: wait for the server to finish stopping.
if kill -0 "$server" 2>/dev/null; then wait "$server" || status=$?; fi
exit "$status"
