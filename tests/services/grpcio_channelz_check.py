"""grpcio (Debian's python3-grpcio 1.51) asks rill's channelz service about the calls it made.

    /usr/bin/python3 grpcio_channelz_check.py --port=PORT --protoc=protoc \
        --grpc_python_plugin=/usr/bin/grpc_python_plugin --proto_root=/usr/share/grpc-proto

The server is rill_interop_server (the admin bundle: health and channelz among others). On one
connection this script makes 3 health checks that succeed and 2 that fail (NOT_FOUND); on a
second connection it asks channelz, through grpcio's own stubs generated from grpc-proto's
channelz.proto, and expects the server's counters, the first connection's socket (streams,
messages, addresses), paging of the server's sockets, and NOT_FOUND for an unknown socket.
Prints `PASS <step>` per step and exits 0 when all passed, 1 at the first failure (also when
grpcio, protoc or the plugin is missing).
"""

import argparse
import time

from grpc_proto_stubs import expect, fail, generate, parse_args


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parse_args(parser)
    generate(args, ["channelz/v1/channelz.proto", "health/v1/health.proto"])
    import grpc
    import channelz_pb2
    import channelz_pb2_grpc
    import health_pb2
    import health_pb2_grpc

    target = f"127.0.0.1:{args.port}"
    # Each channel gets a connection of its own (grpcio shares them between channels otherwise).
    own = [("grpc.use_local_subchannel_pool", 1)]
    work = grpc.insecure_channel(target, options=own)
    health = health_pb2_grpc.HealthStub(work)
    for _ in range(3):
        health.Check(health_pb2.HealthCheckRequest(service=""), timeout=30)
    for _ in range(2):
        try:
            health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=30)
            fail("Check of an unknown service succeeded")
        except grpc.RpcError as e:
            expect(e.code() == grpc.StatusCode.NOT_FOUND, f"unknown service: {e.code()}")
    print("PASS workload: 3 checks succeeded, 2 failed", flush=True)

    admin = grpc.insecure_channel(target, options=own)
    channelz = channelz_pb2_grpc.ChannelzStub(admin)

    servers = channelz.GetServers(channelz_pb2.GetServersRequest(), timeout=30)
    expect(len(servers.server) == 1 and servers.end,
           f"GetServers: {len(servers.server)} servers, end={servers.end}")
    server = servers.server[0]
    server_id = server.ref.server_id
    expect(len(server.listen_socket) >= 1, "the server has no listening socket")
    listen = channelz.GetSocket(
        channelz_pb2.GetSocketRequest(socket_id=server.listen_socket[0].socket_id), timeout=30)
    expect(listen.socket.local.tcpip_address.port == args.port,
           f"listening socket's port {listen.socket.local.tcpip_address.port}")
    print("PASS GetServers and the listening socket", flush=True)

    # The workload's connection: the socket with five streams. Counters settle a moment after
    # the client saw its calls end, hence the retries.
    found = None
    deadline = time.monotonic() + 30
    while found is None and time.monotonic() < deadline:
        refs = channelz.GetServerSockets(
            channelz_pb2.GetServerSocketsRequest(server_id=server_id), timeout=30)
        for ref in refs.socket_ref:
            socket = channelz.GetSocket(channelz_pb2.GetSocketRequest(socket_id=ref.socket_id),
                                        timeout=30).socket
            data = socket.data
            if data.streams_started == 5 and data.streams_succeeded + data.streams_failed == 5:
                found = socket
        if found is None:
            time.sleep(0.01)
    expect(found is not None, "no server socket carries the workload's 5 streams")
    data = found.data
    expect(data.streams_succeeded == 5, f"streams_succeeded {data.streams_succeeded}")
    expect(data.messages_received == 5, f"messages_received {data.messages_received}")
    expect(data.messages_sent == 3, f"messages_sent {data.messages_sent}")
    expect(found.remote.tcpip_address.ip_address == bytes([127, 0, 0, 1]),
           f"remote address {found.remote.tcpip_address.ip_address!r}")
    expect(found.local.tcpip_address.port == args.port,
           f"local port {found.local.tcpip_address.port}")
    expect(data.HasField("last_message_received_timestamp"), "no last message timestamp")
    print("PASS the workload's socket: 5 streams, 5 messages in, 3 out, addresses", flush=True)

    server = channelz.GetServer(channelz_pb2.GetServerRequest(server_id=server_id),
                                timeout=30).server
    expect(server.data.calls_succeeded >= 3 and server.data.calls_failed >= 2,
           f"server calls: {server.data.calls_succeeded} ok, {server.data.calls_failed} failed")
    print("PASS GetServer counts the calls", flush=True)

    # Two connections (the workload's and this one): pages of one.
    first = channelz.GetServerSockets(
        channelz_pb2.GetServerSocketsRequest(server_id=server_id, max_results=1), timeout=30)
    expect(len(first.socket_ref) == 1 and not first.end,
           f"first page: {len(first.socket_ref)} sockets, end={first.end}")
    second = channelz.GetServerSockets(
        channelz_pb2.GetServerSocketsRequest(
            server_id=server_id, start_socket_id=first.socket_ref[0].socket_id + 1,
            max_results=1), timeout=30)
    expect(len(second.socket_ref) == 1 and second.end,
           f"second page: {len(second.socket_ref)} sockets, end={second.end}")
    print("PASS GetServerSockets pages", flush=True)

    top = channelz.GetTopChannels(channelz_pb2.GetTopChannelsRequest(), timeout=30)
    expect(len(top.channel) == 0 and top.end, "the server process has no channels")
    try:
        channelz.GetSocket(channelz_pb2.GetSocketRequest(socket_id=1 << 60), timeout=30)
        fail("GetSocket of an unknown id succeeded")
    except grpc.RpcError as e:
        expect(e.code() == grpc.StatusCode.NOT_FOUND, f"unknown socket: {e.code()}")
    print("PASS GetTopChannels and NOT_FOUND", flush=True)
    work.close()
    admin.close()


if __name__ == "__main__":
    main()
