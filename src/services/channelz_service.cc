#include <chrono>
#include <memory>
#include <string>

#include "grpc/channelz/v1/channelz.rill.h"
#include "rill/channelz.h"
#include "rill/server.h"
#include "rill/services/channelz.h"

namespace rill {
namespace {

namespace cz = ::grpc::channelz::v1;

void SetTime(const std::optional<channelz::Timestamp>& time, google::protobuf::Timestamp* out) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(time->time_since_epoch()).count();
  out->set_seconds(ns / 1'000'000'000);
  out->set_nanos(static_cast<int32_t>(ns % 1'000'000'000));
}

cz::ChannelConnectivityState::State StateOf(channelz::ConnectivityState state) {
  using S = cz::ChannelConnectivityState;
  switch (state) {
    case channelz::ConnectivityState::kIdle:
      return S::IDLE;
    case channelz::ConnectivityState::kConnecting:
      return S::CONNECTING;
    case channelz::ConnectivityState::kReady:
      return S::READY;
    case channelz::ConnectivityState::kTransientFailure:
      return S::TRANSIENT_FAILURE;
    case channelz::ConnectivityState::kShutdown:
      return S::SHUTDOWN;
    case channelz::ConnectivityState::kUnknown:
      break;
  }
  return S::UNKNOWN;
}

void FillAddress(const channelz::Address& address, cz::Address& out) {
  switch (address.kind) {
    case channelz::Address::Kind::kTcpIp:
      out.mutable_tcpip_address()->set_ip_address(address.ip);
      out.mutable_tcpip_address()->set_port(address.port);
      break;
    case channelz::Address::Kind::kUnix:
      out.mutable_uds_address()->set_filename(address.path);
      break;
    case channelz::Address::Kind::kNone:
      break;
  }
}

void FillChannelData(const channelz::ChannelInfo& info, cz::ChannelData& data) {
  data.mutable_state()->set_state(StateOf(info.state));
  data.set_target(info.target);
  data.set_calls_started(info.calls.started);
  data.set_calls_succeeded(info.calls.succeeded);
  data.set_calls_failed(info.calls.failed);
  if (info.calls.last_started) {
    SetTime(info.calls.last_started, data.mutable_last_call_started_timestamp());
  }
}

void FillChannel(const channelz::ChannelInfo& info, cz::Channel& out) {
  out.mutable_ref()->set_channel_id(info.ref.id);
  out.mutable_ref()->set_name(info.ref.name);
  FillChannelData(info, *out.mutable_data());
  for (const auto& sub : info.subchannels) {
    auto* ref = out.add_subchannel_ref();
    ref->set_subchannel_id(sub.id);
    ref->set_name(sub.name);
  }
}

void FillSubchannel(const channelz::ChannelInfo& info, cz::Subchannel& out) {
  out.mutable_ref()->set_subchannel_id(info.ref.id);
  out.mutable_ref()->set_name(info.ref.name);
  FillChannelData(info, *out.mutable_data());
  for (const auto& socket : info.sockets) {
    auto* ref = out.add_socket_ref();
    ref->set_socket_id(socket.id);
    ref->set_name(socket.name);
  }
}

void FillServer(const channelz::ServerInfo& info, cz::Server& out) {
  out.mutable_ref()->set_server_id(info.ref.id);
  out.mutable_ref()->set_name(info.ref.name);
  auto* data = out.mutable_data();
  data->set_calls_started(info.calls.started);
  data->set_calls_succeeded(info.calls.succeeded);
  data->set_calls_failed(info.calls.failed);
  if (info.calls.last_started) {
    SetTime(info.calls.last_started, data->mutable_last_call_started_timestamp());
  }
  for (const auto& listen : info.listen_sockets) {
    auto* ref = out.add_listen_socket();
    ref->set_socket_id(listen.id);
    ref->set_name(listen.name);
  }
}

void FillSocket(const channelz::SocketInfo& info, bool summary, cz::Socket& out) {
  out.mutable_ref()->set_socket_id(info.ref.id);
  out.mutable_ref()->set_name(info.ref.name);
  FillAddress(info.local, *out.mutable_local());
  if (info.listen) return;
  FillAddress(info.remote, *out.mutable_remote());
  out.set_remote_name(info.remote_name);
  auto* data = out.mutable_data();
  data->set_streams_started(info.streams_started);
  data->set_streams_succeeded(info.streams_succeeded);
  data->set_streams_failed(info.streams_failed);
  data->set_messages_sent(info.messages_sent);
  data->set_messages_received(info.messages_received);
  data->set_keep_alives_sent(info.keepalives_sent);
  // A summary carries the counters only (channelz.proto: GetSocketRequest.summary).
  if (summary) return;
  if (info.last_local_stream_created) {
    SetTime(info.last_local_stream_created, data->mutable_last_local_stream_created_timestamp());
  }
  if (info.last_remote_stream_created) {
    SetTime(info.last_remote_stream_created, data->mutable_last_remote_stream_created_timestamp());
  }
  if (info.last_message_sent) {
    SetTime(info.last_message_sent, data->mutable_last_message_sent_timestamp());
  }
  if (info.last_message_received) {
    SetTime(info.last_message_received, data->mutable_last_message_received_timestamp());
  }
  if (info.local_flow_control_window) {
    data->mutable_local_flow_control_window()->set_value(*info.local_flow_control_window);
  }
  if (info.remote_flow_control_window) {
    data->mutable_remote_flow_control_window()->set_value(*info.remote_flow_control_window);
  }
  if (info.tls) {
    auto* tls = out.mutable_security()->mutable_tls();
    tls->set_standard_name(info.tls->cipher);
    tls->set_local_certificate(info.tls->local_certificate);
    tls->set_remote_certificate(info.tls->remote_certificate);
  }
}

Status CheckMaxResults(int64_t max_results) {
  if (max_results < 0) return Status(StatusCode::kInvalidArgument, "max_results is negative");
  return Status();
}

Status NotFound(std::string_view what, int64_t id) {
  return Status(StatusCode::kNotFound, std::string(what) + " " + std::to_string(id) + " not found");
}

class ChannelzServiceImpl final : public cz::Channelz::Service, public ServerPlugin {
 public:
  ChannelzServiceImpl() { channelz::Enable(); }

  Status GetTopChannels(ServerContext& /*context*/, const cz::GetTopChannelsRequest& request,
                        cz::GetTopChannelsResponse& response) override {
    if (Status s = CheckMaxResults(request.max_results()); !s.ok()) return s;
    auto page = channelz::GetTopChannels(request.start_channel_id(), request.max_results());
    for (const auto& channel : page.items) FillChannel(channel, *response.add_channel());
    response.set_end(page.end);
    return Status();
  }

  Status GetServers(ServerContext& /*context*/, const cz::GetServersRequest& request,
                    cz::GetServersResponse& response) override {
    if (Status s = CheckMaxResults(request.max_results()); !s.ok()) return s;
    auto page = channelz::GetServers(request.start_server_id(), request.max_results());
    for (const auto& server : page.items) FillServer(server, *response.add_server());
    response.set_end(page.end);
    return Status();
  }

  Status GetServer(ServerContext& /*context*/, const cz::GetServerRequest& request,
                   cz::GetServerResponse& response) override {
    auto server = channelz::GetServer(request.server_id());
    if (!server) return NotFound("server", request.server_id());
    FillServer(*server, *response.mutable_server());
    return Status();
  }

  Status GetServerSockets(ServerContext& /*context*/, const cz::GetServerSocketsRequest& request,
                          cz::GetServerSocketsResponse& response) override {
    if (Status s = CheckMaxResults(request.max_results()); !s.ok()) return s;
    auto page = channelz::GetServerSockets(request.server_id(), request.start_socket_id(),
                                           request.max_results());
    if (!page) return NotFound("server", request.server_id());
    for (const auto& socket : page->items) {
      auto* ref = response.add_socket_ref();
      ref->set_socket_id(socket.id);
      ref->set_name(socket.name);
    }
    response.set_end(page->end);
    return Status();
  }

  Status GetChannel(ServerContext& /*context*/, const cz::GetChannelRequest& request,
                    cz::GetChannelResponse& response) override {
    auto channel = channelz::GetChannel(request.channel_id());
    if (!channel) return NotFound("channel", request.channel_id());
    FillChannel(*channel, *response.mutable_channel());
    return Status();
  }

  Status GetSubchannel(ServerContext& /*context*/, const cz::GetSubchannelRequest& request,
                       cz::GetSubchannelResponse& response) override {
    auto subchannel = channelz::GetSubchannel(request.subchannel_id());
    if (!subchannel) return NotFound("subchannel", request.subchannel_id());
    FillSubchannel(*subchannel, *response.mutable_subchannel());
    return Status();
  }

  Status GetSocket(ServerContext& /*context*/, const cz::GetSocketRequest& request,
                   cz::GetSocketResponse& response) override {
    auto socket = channelz::GetSocket(request.socket_id());
    if (!socket) return NotFound("socket", request.socket_id());
    FillSocket(*socket, request.summary(), *response.mutable_socket());
    return Status();
  }
};

}  // namespace

void AddChannelzService(ServerBuilder& builder) {
  auto service = std::make_shared<ChannelzServiceImpl>();
  builder.RegisterService(service.get());
  builder.AddPlugin(std::move(service));
}

}  // namespace rill
