// rill::channelz: what the process's servers, listening sockets, connections and channels are
// doing right now, read as snapshots. The grpc.channelz.v1.Channelz service
// (rill/services/channelz.h) serves these; a program may read them directly as well.
//
//   rill::channelz::Page<rill::channelz::ServerInfo> page = rill::channelz::GetServers(0, 10);
//   for (const auto& server : page.items) {
//     std::printf("server %lld: %lld calls\n", server.id, server.calls.started);
//   }
//
// Every server, listening socket, connection (server and client side), channel and subchannel
// gets a process-wide id (positive, increasing, never reused) when it is created and leaves the
// registry when it is destroyed. Counters are always kept (each is written only by the reactor
// that owns the object, so counting costs a plain add); timestamps and flow-control windows are
// recorded once Enable() was called (AddChannelzService() calls it), since reading the clock
// for every message would cost more than the counting.
//
// A snapshot is consistent per object, not across objects: calls finishing while it is taken
// may show in one counter and not yet in another.
//
// Thread safety: thread-safe.
#ifndef RILL_CHANNELZ_H_
#define RILL_CHANNELZ_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rill::channelz {

using Timestamp = std::chrono::system_clock::time_point;

// Turns on timestamps and flow-control windows, process-wide (idempotent).
void Enable();
[[nodiscard]] bool Enabled();

struct CallCounts {
  int64_t started = 0;
  int64_t succeeded = 0;  // ended with status OK
  int64_t failed = 0;     // ended with any other status
  std::optional<Timestamp> last_started;
};

enum class ConnectivityState : uint8_t {
  kUnknown,
  kIdle,
  kConnecting,
  kReady,
  kTransientFailure,
  kShutdown,
};

struct Ref {
  int64_t id = 0;
  std::string name;
};

struct Address {
  enum class Kind : uint8_t { kNone, kTcpIp, kUnix };
  Kind kind = Kind::kNone;
  std::string ip;    // kTcpIp: 4 or 16 bytes, network order
  int port = 0;      // kTcpIp
  std::string path;  // kUnix
};

struct TlsInfo {
  std::string cipher;              // the IANA (RFC) name, e.g. "TLS_AES_128_GCM_SHA256"
  std::string local_certificate;   // DER; empty when none was sent
  std::string remote_certificate;  // DER; empty when the peer sent none
};

struct SocketInfo {
  Ref ref;
  bool listen = false;  // a listening socket: only the addresses are set
  Address local;
  Address remote;
  std::string remote_name;  // "ipv4:127.0.0.1:5000", "unix:/path"
  int64_t streams_started = 0;
  int64_t streams_succeeded = 0;  // ended with END_STREAM and no reset
  int64_t streams_failed = 0;
  int64_t messages_sent = 0;
  int64_t messages_received = 0;
  int64_t keepalives_sent = 0;
  std::optional<Timestamp> last_local_stream_created;
  std::optional<Timestamp> last_remote_stream_created;
  std::optional<Timestamp> last_message_sent;
  std::optional<Timestamp> last_message_received;
  // The connection-level HTTP/2 windows as last seen (after Enable()).
  std::optional<int64_t> local_flow_control_window;
  std::optional<int64_t> remote_flow_control_window;
  std::optional<TlsInfo> tls;
};

struct ServerInfo {
  Ref ref;
  CallCounts calls;  // every connection's, the closed ones' included
  std::vector<Ref> listen_sockets;
};

// A channel, or one of its subchannels.
struct ChannelInfo {
  Ref ref;
  std::string target;
  ConnectivityState state = ConnectivityState::kUnknown;
  CallCounts calls;
  std::vector<Ref> subchannels;  // channels only
  std::vector<Ref> sockets;      // subchannels only: their live connections
};

// A page of a listing: items with id >= the start asked for, in increasing id order; `end`
// says that nothing with a higher id existed when the page was taken.
template <typename T>
struct Page {
  std::vector<T> items;
  bool end = true;
};

// `max_results` 0 picks a default page size (100).
[[nodiscard]] Page<ChannelInfo> GetTopChannels(int64_t start_id, int64_t max_results);
[[nodiscard]] Page<ServerInfo> GetServers(int64_t start_id, int64_t max_results);
// nullopt: no such server.
[[nodiscard]] std::optional<Page<Ref>> GetServerSockets(int64_t server_id, int64_t start_id,
                                                        int64_t max_results);
[[nodiscard]] std::optional<ServerInfo> GetServer(int64_t id);
[[nodiscard]] std::optional<ChannelInfo> GetChannel(int64_t id);
[[nodiscard]] std::optional<ChannelInfo> GetSubchannel(int64_t id);
// A connection or a listening socket.
[[nodiscard]] std::optional<SocketInfo> GetSocket(int64_t id);

}  // namespace rill::channelz

#endif  // RILL_CHANNELZ_H_
