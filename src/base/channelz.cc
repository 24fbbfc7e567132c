#include "src/base/channelz.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

namespace rill::internal::channelz {

std::atomic<bool> g_enabled{false};

namespace {

using rill::channelz::Address;
using rill::channelz::CallCounts;
using rill::channelz::ChannelInfo;
using rill::channelz::ConnectivityState;
using rill::channelz::Page;
using rill::channelz::Ref;
using rill::channelz::ServerInfo;
using rill::channelz::SocketInfo;

constexpr int64_t kDefaultPageSize = 100;

struct State {
  std::mutex mu;
  int64_t next_id = 1;
  std::map<int64_t, Node*> nodes;  // by id: listings page in id order
};

// Never destroyed: objects with nodes may be destroyed during static destruction.
State& TheState() {
  static State* state = new State;
  return *state;
}

std::optional<rill::channelz::Timestamp> ToTime(int64_t ns) {
  if (ns == 0) return std::nullopt;
  return rill::channelz::Timestamp(std::chrono::duration_cast<rill::channelz::Timestamp::duration>(
      std::chrono::nanoseconds(ns)));
}

Address ToAddress(const sockaddr_storage& storage, socklen_t length, std::string* name) {
  Address address;
  char text[INET6_ADDRSTRLEN] = {};
  if (storage.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(storage);
    address.kind = Address::Kind::kTcpIp;
    address.ip.assign(reinterpret_cast<const char*>(&in.sin_addr), 4);
    address.port = ntohs(in.sin_port);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
    if (name != nullptr) *name = "ipv4:" + std::string(text) + ":" + std::to_string(address.port);
  } else if (storage.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(storage);
    address.kind = Address::Kind::kTcpIp;
    address.ip.assign(reinterpret_cast<const char*>(&in6.sin6_addr), 16);
    address.port = ntohs(in6.sin6_port);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
    if (name != nullptr) {
      *name = "ipv6:[" + std::string(text) + "]:" + std::to_string(address.port);
    }
  } else if (storage.ss_family == AF_UNIX) {
    const auto& un = reinterpret_cast<const sockaddr_un&>(storage);
    address.kind = Address::Kind::kUnix;
    const size_t offset = offsetof(sockaddr_un, sun_path);
    if (length > offset) {
      const size_t n = length - offset;
      address.path.assign(un.sun_path, strnlen(un.sun_path, n));
    }
    if (name != nullptr) *name = "unix:" + address.path;
  }
  return address;
}

bool Matches(const Node& node, NodeKind kind) { return node.kind() == kind; }

}  // namespace

void Stamp::SetNow() noexcept {
  Set(std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
}

void Node::Unregister() noexcept {
  if (id_ != 0) Registry::Get().Unregister(*this);
}

SocketNode::~SocketNode() { Unregister(); }
ServerNode::~ServerNode() { Unregister(); }
ChannelNode::~ChannelNode() { Unregister(); }

void SocketNode::DescribeSocket(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) == 0) {
    local = ToAddress(storage, length, nullptr);
  }
  storage = {};
  length = sizeof(storage);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &length) == 0) {
    remote = ToAddress(storage, length, &remote_name);
  }
}

Registry& Registry::Get() {
  static Registry registry;
  return registry;
}

void Registry::Register(Node& node, Node* parent) {
  State& state = TheState();
  std::lock_guard lock(state.mu);
  node.id_ = state.next_id++;
  state.nodes.emplace(node.id_, &node);
  if (parent != nullptr && parent->id_ != 0) {
    node.parent_ = parent->id_;
    parent->children_.insert(node.id_);
  }
}

void Registry::Unregister(Node& node) noexcept {
  State& state = TheState();
  std::lock_guard lock(state.mu);
  state.nodes.erase(node.id_);
  if (node.parent_ != 0) {
    auto it = state.nodes.find(node.parent_);
    if (it != state.nodes.end()) {
      Node& parent = *it->second;
      parent.children_.erase(node.id_);
      if (parent.kind() == NodeKind::kServer && node.kind() == NodeKind::kSocket) {
        // The server's totals keep the calls of its closed connections.
        auto& server = static_cast<ServerNode&>(parent);
        const auto& calls = static_cast<SocketNode&>(node).calls;
        server.retired_started_ += calls.started.Get();
        server.retired_succeeded_ += calls.succeeded.Get();
        server.retired_failed_ += calls.failed.Get();
        server.retired_last_started_ =
            std::max(server.retired_last_started_, calls.last_started.Get());
      }
    }
  }
  // Children outlive their parent in some teardown orders: they forget it.
  for (int64_t child : node.children_) {
    auto it = state.nodes.find(child);
    if (it != state.nodes.end()) it->second->parent_ = 0;
  }
  node.children_.clear();
  node.id_ = 0;
  node.parent_ = 0;
}

void Registry::SetTls(SocketNode& node, rill::channelz::TlsInfo tls) {
  std::lock_guard lock(TheState().mu);
  node.tls_ = std::move(tls);
}

// Snapshots, under the registry's mutex.
class Snapshots {
 public:
  static Ref RefOf(const Node& node) { return Ref{node.id(), node.name}; }

  static std::vector<Ref> Children(const State& state, const Node& node, NodeKind kind) {
    std::vector<Ref> refs;
    for (int64_t id : node.children_) {
      auto it = state.nodes.find(id);
      if (it != state.nodes.end() && it->second->kind() == kind) refs.push_back(RefOf(*it->second));
    }
    return refs;
  }

  static ServerInfo Server(const State& state, const ServerNode& node) {
    ServerInfo info;
    info.ref = RefOf(node);
    int64_t last = node.retired_last_started_;
    info.calls.started = node.retired_started_;
    info.calls.succeeded = node.retired_succeeded_;
    info.calls.failed = node.retired_failed_;
    for (int64_t id : node.children_) {
      auto it = state.nodes.find(id);
      if (it == state.nodes.end()) continue;
      if (it->second->kind() == NodeKind::kListenSocket) {
        info.listen_sockets.push_back(RefOf(*it->second));
      } else if (it->second->kind() == NodeKind::kSocket) {
        const auto& calls = static_cast<const SocketNode&>(*it->second).calls;
        info.calls.started += calls.started.Get();
        info.calls.succeeded += calls.succeeded.Get();
        info.calls.failed += calls.failed.Get();
        last = std::max(last, calls.last_started.Get());
      }
    }
    info.calls.last_started = ToTime(last);
    return info;
  }

  static ChannelInfo Channel(const State& state, const ChannelNode& node) {
    ChannelInfo info;
    info.ref = RefOf(node);
    info.target = node.target;
    info.state = static_cast<ConnectivityState>(node.state_.load(std::memory_order_relaxed));
    info.calls.started = node.calls.started.Get();
    info.calls.succeeded = node.calls.succeeded.Get();
    info.calls.failed = node.calls.failed.Get();
    info.calls.last_started = ToTime(node.calls.last_started.Get());
    if (node.kind() == NodeKind::kChannel) {
      info.subchannels = Children(state, node, NodeKind::kSubchannel);
    } else {
      info.sockets = Children(state, node, NodeKind::kSocket);
    }
    return info;
  }

  static SocketInfo Socket(const SocketNode& node) {
    SocketInfo info;
    info.ref = RefOf(node);
    info.listen = node.kind() == NodeKind::kListenSocket;
    info.local = node.local;
    info.remote = node.remote;
    info.remote_name = node.remote_name;
    info.streams_started = node.streams_started.Get();
    info.streams_succeeded = node.streams_succeeded.Get();
    info.streams_failed = node.streams_failed.Get();
    info.messages_sent = node.messages_sent.Get();
    info.messages_received = node.messages_received.Get();
    info.keepalives_sent = node.keepalives_sent.Get();
    info.last_local_stream_created = ToTime(node.last_local_stream_created.Get());
    info.last_remote_stream_created = ToTime(node.last_remote_stream_created.Get());
    info.last_message_sent = ToTime(node.last_message_sent.Get());
    info.last_message_received = ToTime(node.last_message_received.Get());
    if (int64_t w = node.local_window.load(std::memory_order_relaxed); w >= 0) {
      info.local_flow_control_window = w;
    }
    if (int64_t w = node.remote_window.load(std::memory_order_relaxed); w >= 0) {
      info.remote_flow_control_window = w;
    }
    info.tls = node.tls_;
    return info;
  }

  // Items of `kind` (under `parent` when given) with id >= start, at most `max` of them.
  template <typename T, typename Fill>
  static Page<T> List(const State& state, NodeKind kind, const Node* parent, int64_t start,
                      int64_t max, Fill fill) {
    Page<T> page;
    if (max <= 0) max = kDefaultPageSize;
    start = std::max<int64_t>(start, 0);
    auto visit = [&](const Node& node) {
      if (!Matches(node, kind)) return true;
      if (static_cast<int64_t>(page.items.size()) == max) {
        page.end = false;  // one more exists
        return false;
      }
      page.items.push_back(fill(node));
      return true;
    };
    if (parent != nullptr) {
      for (auto it = parent->children_.lower_bound(start); it != parent->children_.end(); ++it) {
        auto node = state.nodes.find(*it);
        if (node != state.nodes.end() && !visit(*node->second)) break;
      }
    } else {
      for (auto it = state.nodes.lower_bound(start); it != state.nodes.end(); ++it) {
        if (!visit(*it->second)) break;
      }
    }
    return page;
  }

  static const Node* Find(const State& state, int64_t id, NodeKind kind) {
    auto it = state.nodes.find(id);
    if (it == state.nodes.end() || it->second->kind() != kind) return nullptr;
    return it->second;
  }
};

}  // namespace rill::internal::channelz

namespace rill::channelz {

using internal::channelz::ChannelNode;
using internal::channelz::NodeKind;
using internal::channelz::ServerNode;
using internal::channelz::Snapshots;
using internal::channelz::SocketNode;
using internal::channelz::TheState;

void Enable() { internal::channelz::g_enabled.store(true, std::memory_order_relaxed); }
bool Enabled() { return internal::channelz::Enabled(); }

Page<ChannelInfo> GetTopChannels(int64_t start_id, int64_t max_results) {
  auto& state = TheState();
  std::lock_guard lock(state.mu);
  return Snapshots::List<ChannelInfo>(
      state, NodeKind::kChannel, nullptr, start_id, max_results, [&](const auto& node) {
        return Snapshots::Channel(state, static_cast<const ChannelNode&>(node));
      });
}

Page<ServerInfo> GetServers(int64_t start_id, int64_t max_results) {
  auto& state = TheState();
  std::lock_guard lock(state.mu);
  return Snapshots::List<ServerInfo>(
      state, NodeKind::kServer, nullptr, start_id, max_results, [&](const auto& node) {
        return Snapshots::Server(state, static_cast<const ServerNode&>(node));
      });
}

std::optional<Page<Ref>> GetServerSockets(int64_t server_id, int64_t start_id,
                                          int64_t max_results) {
  auto& state = TheState();
  std::lock_guard lock(state.mu);
  const auto* server = Snapshots::Find(state, server_id, NodeKind::kServer);
  if (server == nullptr) return std::nullopt;
  return Snapshots::List<Ref>(state, NodeKind::kSocket, server, start_id, max_results,
                              [](const auto& node) { return Snapshots::RefOf(node); });
}

std::optional<ServerInfo> GetServer(int64_t id) {
  auto& state = TheState();
  std::lock_guard lock(state.mu);
  const auto* node = Snapshots::Find(state, id, NodeKind::kServer);
  if (node == nullptr) return std::nullopt;
  return Snapshots::Server(state, static_cast<const ServerNode&>(*node));
}

std::optional<ChannelInfo> GetChannel(int64_t id) {
  auto& state = TheState();
  std::lock_guard lock(state.mu);
  const auto* node = Snapshots::Find(state, id, NodeKind::kChannel);
  if (node == nullptr) return std::nullopt;
  return Snapshots::Channel(state, static_cast<const ChannelNode&>(*node));
}

std::optional<ChannelInfo> GetSubchannel(int64_t id) {
  auto& state = TheState();
  std::lock_guard lock(state.mu);
  const auto* node = Snapshots::Find(state, id, NodeKind::kSubchannel);
  if (node == nullptr) return std::nullopt;
  return Snapshots::Channel(state, static_cast<const ChannelNode&>(*node));
}

std::optional<SocketInfo> GetSocket(int64_t id) {
  auto& state = TheState();
  std::lock_guard lock(state.mu);
  const auto* node = Snapshots::Find(state, id, NodeKind::kSocket);
  if (node == nullptr) node = Snapshots::Find(state, id, NodeKind::kListenSocket);
  if (node == nullptr) return std::nullopt;
  return Snapshots::Socket(static_cast<const SocketNode&>(*node));
}

}  // namespace rill::channelz
