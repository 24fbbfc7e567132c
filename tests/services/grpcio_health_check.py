"""grpcio (Debian's python3-grpcio 1.51) asks rill's health service: Check and Watch transitions,
and NOT_SERVING for every service when the server shuts down.

    /usr/bin/python3 grpcio_health_check.py --server=build/test/tests/services/health_server \
        --protoc=protoc --grpc_python_plugin=/usr/bin/grpc_python_plugin \
        --proto_root=/usr/share/grpc-proto

The client is grpcio's own stub, HealthStub, generated from grpc-proto's
grpc/health/v1/health.proto by protoc with grpc_python_plugin into a temporary directory. The
server is health_server, whose statuses this script sets through its stdin. Prints
`PASS <step>` per step and exits 0 when all passed, 1 at the first failure (also when grpcio,
protoc or the plugin is missing).
"""

import argparse
import subprocess
import sys

from grpc_proto_stubs import expect, fail, generate, parse_args


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    args = parse_args(parser)
    generate(args, ["health/v1/health.proto"])
    import grpc
    import health_pb2
    import health_pb2_grpc

    Response = health_pb2.HealthCheckResponse
    name = Response.ServingStatus.Name

    server = subprocess.Popen([args.server, "--port=0"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        first = server.stdout.readline().split()
        expect(len(first) == 2 and first[0] == "port", f"health_server printed {first}")
        port = int(first[1])

        def command(line, wait=True):
            server.stdin.write(line + "\n")
            server.stdin.flush()
            if wait:
                reply = server.stdout.readline().strip()
                expect(reply == f"ok {line}", f"health_server answered {reply!r} to {line!r}")

        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = health_pb2_grpc.HealthStub(channel)

        def check(service):
            """The status name, or the error code's name."""
            try:
                return name(stub.Check(health_pb2.HealthCheckRequest(service=service),
                                       timeout=30).status)
            except grpc.RpcError as e:
                return e.code().name

        def watch(service):
            return stub.Watch(health_pb2.HealthCheckRequest(service=service), timeout=60)

        def next_status(stream, what):
            try:
                return name(next(stream).status)
            except grpc.RpcError as e:
                fail(f"{what}: the watch failed with {e.code().name}: {e.details()}")
            except StopIteration:
                fail(f"{what}: the watch ended")

        expect(check("") == "SERVING", f"Check(\"\") gave {check('')}")
        expect(check("svc") == "NOT_FOUND", f"Check(svc) gave {check('svc')}")
        print("PASS check", flush=True)

        watch_svc = watch("svc")
        watch_all = watch("")
        got = next_status(watch_svc, "watch svc")
        expect(got == "SERVICE_UNKNOWN", f"watch svc began with {got}")
        got = next_status(watch_all, "watch all")
        expect(got == "SERVING", f"watch \"\" began with {got}")

        for line, expected in [("set svc SERVING", "SERVING"),
                               ("set svc NOT_SERVING", "NOT_SERVING"),
                               ("set svc SERVING", "SERVING"),
                               ("clear svc", "SERVICE_UNKNOWN"),
                               ("set svc SERVING", "SERVING")]:
            command(line)
            got = next_status(watch_svc, line)
            expect(got == expected, f"after {line!r} the watch sent {got}, not {expected}")
            want_check = "NOT_FOUND" if expected == "SERVICE_UNKNOWN" else expected
            expect(check("svc") == want_check, f"after {line!r} Check(svc) gave {check('svc')}")
        print("PASS watch transitions", flush=True)

        command("shutdown", wait=False)
        for stream, what in [(watch_svc, "svc"), (watch_all, "\"\"")]:
            got = next_status(stream, f"watch {what} at shutdown")
            expect(got == "NOT_SERVING", f"at shutdown the watch of {what} sent {got}")
            try:
                extra = next(stream)
                fail(f"the watch of {what} sent {extra} after NOT_SERVING")
            except grpc.RpcError as e:
                expect(e.code() == grpc.StatusCode.UNAVAILABLE,
                       f"the watch of {what} ended with {e.code().name}: {e.details()}")
            except StopIteration:
                fail(f"the watch of {what} ended OK; expected UNAVAILABLE")
        reply = server.stdout.readline().strip()
        expect(reply == "ok shutdown", f"health_server answered {reply!r} to shutdown")
        expect(server.wait(timeout=30) == 0, "health_server did not exit cleanly")
        print("PASS not serving on shutdown", flush=True)
        channel.close()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
