#!/usr/bin/env bash
# Runs the grpcio interop client: generates the message modules it needs from grpc-proto's
# grpc/testing into a temporary directory, then runs interop_client.py with Debian's python (the
# only one that has python3-grpcio). Arguments go to the client unchanged.
#
#   tests/peers/python/run_client.sh --server_host=127.0.0.1 --server_port=50051 --test_case=all
#
# PEER_PYTHON overrides the interpreter; RILL_GRPC_PROTO_ROOT the grpc-proto root (default
# /usr/share/grpc-proto, Debian's grpc-proto package).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
testing_protos="${RILL_GRPC_PROTO_ROOT:-/usr/share/grpc-proto}/grpc/testing"
python="${PEER_PYTHON:-/usr/bin/python3}"

gen="$(mktemp -d)"
trap 'rm -rf "$gen"' EXIT

# empty.proto and messages.proto import nothing, so they are compiled from their own folder:
# the modules become top-level `empty_pb2` and `messages_pb2` instead of living under a
# `grpc` package, which would collide with grpcio's. Message names keep package grpc.testing.
protoc -I"$testing_protos" --python_out="$gen" "$testing_protos/empty.proto" \
  "$testing_protos/messages.proto"

status=0
PYTHONPATH="$gen${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
  "$python" "$here/interop_client.py" "$@" || status=$?
exit "$status"
