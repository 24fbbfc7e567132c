// The channelz registry: ids for servers, listening sockets, connections, channels and
// subchannels, their counters, and the snapshots rill/channelz.h hands out.
//
// Every object that channelz shows embeds a node (ServerNode, SocketNode, ChannelNode) and
// registers it once its fixed fields (name, addresses, target) are set; the node leaves the
// registry when it is destroyed, before any of its fields is. The registry only points at the
// nodes (weak registration): it owns nothing and never keeps an object alive.
//
// Counters are written by the one reactor that owns the object and read by whoever takes a
// snapshot: a relaxed load and a relaxed store (no read-modify-write, no lock prefix), so
// counting costs a plain add. Timestamps are taken only once channelz is enabled.
//
// The registry is process-wide, as channelz itself is: the service lists every channel and
// server of the process, whichever builder made them. Its mutex is a leaf lock: nothing else is
// locked or called while it is held.
//
// Thread safety: thread-safe (nodes: each counter has one writer, see above).
#ifndef RILL_SRC_BASE_CHANNELZ_H_
#define RILL_SRC_BASE_CHANNELZ_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "rill/channelz.h"

struct sockaddr;

namespace rill::internal::channelz {

extern std::atomic<bool> g_enabled;

// Timestamps and windows are recorded (rill::channelz::Enable() was called).
inline bool Enabled() noexcept { return g_enabled.load(std::memory_order_relaxed); }

// A counter with one writer.
class Counter {
 public:
  void Add(int64_t n = 1) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  [[nodiscard]] int64_t Get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// A wall-clock time with one writer; 0: never set.
class Stamp {
 public:
  void SetNow() noexcept;
  void Set(int64_t ns) noexcept { ns_.store(ns, std::memory_order_relaxed); }
  [[nodiscard]] int64_t Get() const noexcept { return ns_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> ns_{0};
};

struct CallCounters {
  Counter started;
  Counter succeeded;
  Counter failed;
  Stamp last_started;

  void Started() noexcept {
    started.Add();
    if (Enabled()) last_started.SetNow();
  }
  void Ended(bool ok) noexcept { (ok ? succeeded : failed).Add(); }
};

class Snapshots;

enum class NodeKind : uint8_t { kServer, kListenSocket, kSocket, kChannel, kSubchannel };

class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  [[nodiscard]] NodeKind kind() const noexcept { return kind_; }
  // 0 until registered.
  [[nodiscard]] int64_t id() const noexcept { return id_; }

  // Set before Register(), fixed after.
  std::string name;

 protected:
  explicit Node(NodeKind kind) : kind_(kind) {}
  ~Node() = default;
  // Leaves the registry (if registered): every node type is final and runs this first thing in
  // its destructor, so that no snapshot reads a field being destroyed.
  void Unregister() noexcept;

 private:
  friend class Registry;
  friend class Snapshots;
  const NodeKind kind_;
  int64_t id_ = 0;
  int64_t parent_ = 0;
  std::set<int64_t> children_;  // guarded by the registry's mutex
};

// A connection (server or client side) or a listening socket.
class SocketNode final : public Node {
 public:
  explicit SocketNode(bool listen = false)
      : Node(listen ? NodeKind::kListenSocket : NodeKind::kSocket) {}
  ~SocketNode();

  // Fills local, remote and remote_name from the socket (before Register()).
  void DescribeSocket(int fd);

  // Fixed once registered.
  rill::channelz::Address local;
  rill::channelz::Address remote;
  std::string remote_name;

  Counter streams_started;
  Counter streams_succeeded;
  Counter streams_failed;
  Counter messages_sent;
  Counter messages_received;
  Counter keepalives_sent;
  Stamp last_local_stream_created;
  Stamp last_remote_stream_created;
  Stamp last_message_sent;
  Stamp last_message_received;
  std::atomic<int64_t> local_window{-1};  // -1: not seen
  std::atomic<int64_t> remote_window{-1};
  // A server connection's calls: they add up to the server's.
  CallCounters calls;

  void MessageSent() noexcept { MessagesSent(1); }
  void MessagesSent(int64_t n) noexcept {
    messages_sent.Add(n);
    if (Enabled()) last_message_sent.SetNow();
  }
  void MessagesReceived(int64_t n) noexcept {
    messages_received.Add(n);
    if (Enabled()) last_message_received.SetNow();
  }
  void StreamStarted(bool local) noexcept {
    streams_started.Add();
    if (Enabled()) (local ? last_local_stream_created : last_remote_stream_created).SetNow();
  }
  void StreamEnded(bool ok) noexcept { (ok ? streams_succeeded : streams_failed).Add(); }

 private:
  friend class Registry;
  friend class Snapshots;
  std::optional<rill::channelz::TlsInfo> tls_;  // guarded by the registry's mutex
};

class ServerNode final : public Node {
 public:
  ServerNode() : Node(NodeKind::kServer) {}
  ~ServerNode();

 private:
  friend class Registry;
  friend class Snapshots;
  // The calls of connections already gone; guarded by the registry's mutex.
  int64_t retired_started_ = 0;
  int64_t retired_succeeded_ = 0;
  int64_t retired_failed_ = 0;
  int64_t retired_last_started_ = 0;
};

// A channel or a subchannel.
class ChannelNode final : public Node {
 public:
  explicit ChannelNode(bool subchannel)
      : Node(subchannel ? NodeKind::kSubchannel : NodeKind::kChannel) {}
  ~ChannelNode();

  void SetState(rill::channelz::ConnectivityState state) noexcept {
    state_.store(static_cast<uint8_t>(state), std::memory_order_relaxed);
  }

  std::string target;  // fixed once registered
  CallCounters calls;

 private:
  friend class Registry;
  friend class Snapshots;
  std::atomic<uint8_t> state_{static_cast<uint8_t>(rill::channelz::ConnectivityState::kIdle)};
};

class Registry {
 public:
  static Registry& Get();

  // Gives `node` its id and lists it (under `parent`, a registered node or nullptr).
  void Register(Node& node, Node* parent = nullptr);
  // Records the TLS parameters of a connection (once its handshake is done).
  void SetTls(SocketNode& node, rill::channelz::TlsInfo tls);

 private:
  friend class Node;
  void Unregister(Node& node) noexcept;
};

}  // namespace rill::internal::channelz

#endif  // RILL_SRC_BASE_CHANNELZ_H_
