#include "src/rpc/server_impl.h"

#include <asio/post.hpp>
#include <string>

#include "rill/log.h"
#include "src/base/user_code.h"
#include "src/rpc/channel_impl.h"
#include "src/rpc/in_process_acceptor.h"
#include "src/rpc/server_transport.h"
#include "src/transport/tls_context.h"

namespace rill::internal {

ServerImpl::ServerImpl(ServerConfig config)
    : config_(std::move(config)),
      pool_(config_.pool != nullptr ? config_.pool : &DefaultBufferPool()),
      compressors_(config_.compressors),
      in_process_(std::make_shared<InProcessAcceptor>(this)) {}

ServerImpl::~ServerImpl() {
  RILL_CHECK_MSG(ReactorPool::Current() == nullptr,
                 "a rill::Server must not be destroyed on a reactor thread (its connections "
                 "live there); shut it down from the handler and destroy it elsewhere");
  Shutdown(std::chrono::milliseconds(0));
  if (shutdown_thread_.joinable()) shutdown_thread_.join();
}

Status ServerImpl::Start() {
  for (Service* service : config_.services) {
    for (const auto& method : service->methods()) {
      if (!methods_.emplace(method->path(), method.get()).second) {
        return Status(StatusCode::kInvalidArgument,
                      "method " + method->path() + " is registered twice");
      }
    }
  }
  if (config_.reactors != nullptr) {
    reactors_ = config_.reactors;
  } else {
    owned_reactors_ = std::make_unique<ReactorPool>(
        ReactorPool::Options{.threads = config_.reactor_count, .cpus = {}});
    reactors_ = owned_reactors_.get();
  }
  for (const auto& port : config_.ports) {
    StatusOr<Address> address = ParseAddress(port.address);
    if (!address.ok()) return address.status();
    const ServerCredentials* credentials = port.credentials.get();
    if (credentials != nullptr && !credentials->secure()) credentials = nullptr;
    auto listener = Listener::Create(
        *address, *reactors_,
        [this, credentials](Listener::Socket socket) { Accept(std::move(socket), credentials); });
    if (!listener.ok()) return listener.status();
    bound_ports_.push_back((*listener)->port());
    if (port.selected_port != nullptr) *port.selected_port = (*listener)->port();
    listeners_.push_back(std::move(*listener));
  }
  for (const auto& listener : listeners_) {
    if (!channelz_.name.empty()) channelz_.name += ", ";
    channelz_.name += listener->name();
  }
  channelz::Registry::Get().Register(channelz_);
  for (const auto& listener : listeners_) {
    auto node = std::make_unique<channelz::SocketNode>(/*listen=*/true);
    node->name = listener->name();
    node->DescribeSocket(listener->native_handle());
    channelz::Registry::Get().Register(*node, &channelz_);
    listen_nodes_.push_back(std::move(node));
  }
  for (auto& listener : listeners_) listener->Start();
  return Status();
}

const detail::MethodHandler* ServerImpl::FindMethod(std::string_view path) const {
  auto it = methods_.find(path);
  return it == methods_.end() ? nullptr : it->second;
}

void ServerImpl::Accept(Listener::Socket socket, const ServerCredentials* credentials) {
  if (shutting_down()) return;  // the socket closes as it goes out of scope
  {
    std::lock_guard lock(mu_);
    if (config_.options.max_connections != 0 &&
        transports_.size() >= config_.options.max_connections) {
      // Over the limit: the socket closes as it goes out of scope, before any HTTP/2.
      return;
    }
  }
  // The handshake uses the credentials' current context (a reload affects later handshakes).
  std::shared_ptr<TlsContext> tls =
      credentials != nullptr ? CredentialsAccess::Context(*credentials) : nullptr;
  auto owned = std::make_unique<ServerTransport>(*this, std::move(socket), std::move(tls));
  ServerTransport* transport = owned.get();
  {
    std::lock_guard lock(mu_);
    if (shutting_down()) return;
    transports_.emplace(transport, std::move(owned));
  }
  transport->Start();
}

void ServerImpl::AcceptInProcess(PipeEnd pipe) {
  asio::io_context& io = reactors_->Next();
  std::lock_guard posting(mu_);
  ++posted_to_transports_;  // Shutdown waits for this handler as for work posted to transports
  asio::post(io, [this, &io, pipe = std::move(pipe)]() mutable {
    std::unique_ptr<ServerTransport> owned;
    ServerTransport* transport = nullptr;
    {
      std::lock_guard lock(mu_);
      const bool refused = shutting_down() ||
                           (config_.options.max_connections != 0 &&
                            transports_.size() >= config_.options.max_connections);
      if (!refused) {
        owned = std::make_unique<ServerTransport>(*this, std::move(pipe), io);
        transport = owned.get();
        transports_.emplace(transport, std::move(owned));
      }
    }
    pipe.Close();  // a refused connection: the channel reads end-of-stream
    if (transport != nullptr) transport->Start();
    std::lock_guard lock(mu_);
    if (--posted_to_transports_ == 0) cv_.notify_all();
  });
}

std::shared_ptr<Channel> ServerImpl::InProcessChannel(const ChannelOptions& options) {
  return ChannelAccess::Wrap(ChannelImpl::CreateInProcess(options, in_process_));
}

void ServerImpl::OnRefusedAtCap(bool server_wide) noexcept {
  refused_total_.fetch_add(1, std::memory_order_relaxed);
  (server_wide ? refused_server_wide_unlogged_ : refused_per_connection_unlogged_)
      .fetch_add(1, std::memory_order_relaxed);
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  int64_t last = refusal_logged_at_.load(std::memory_order_relaxed);
  const int64_t interval =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(kRefusalLogInterval)
          .count();
  if (last != INT64_MIN && now - last < interval) return;
  // One thread wins the line; the others' refusals wait for the next one.
  if (!refusal_logged_at_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  const uint64_t server_wide_count = refused_server_wide_unlogged_.exchange(0);
  const uint64_t per_connection_count = refused_per_connection_unlogged_.exchange(0);
  // (Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict in chains of operator+.)
  std::string line = "refused new streams (REFUSED_STREAM) at a handler cap:";
  const auto add = [&line](uint64_t count, const char* option, uint64_t limit) {
    if (count == 0) return;
    line.append(" ").append(std::to_string(count)).append(" at ").append(option);
    line.append(" (").append(std::to_string(limit)).append(")");
  };
  add(server_wide_count, "max_running_handlers", config_.options.max_running_handlers);
  add(per_connection_count, "max_running_handlers_per_connection",
      config_.options.max_running_handlers_per_connection);
  line.append("; clients that do not retry them fail the calls UNAVAILABLE");
  Log(LogSeverity::kWarning, line);
}

void ServerImpl::OnTransportDone(ServerTransport* transport) {
  std::unique_ptr<ServerTransport> done;
  std::lock_guard lock(mu_);
  auto it = transports_.find(transport);
  done = std::move(it->second);
  transports_.erase(it);
  // Destroyed under the lock: a handler posted to it by PostToTransportLocked checks, under
  // the same lock, that it still exists.
  done.reset();
  if (transports_.empty()) cv_.notify_all();
}

void ServerImpl::PostToTransportLocked(ServerTransport* transport,
                                       void (ServerTransport::*step)()) {
  ++posted_to_transports_;
  asio::post(transport->connection().io_context(), [this, transport, step] {
    std::unique_lock lock(mu_);
    // A transport is destroyed and leaves transports_ in one handler on its reactor, this
    // one's: it is either still in the set, and alive until this handler returns, or gone. (No
    // new transport can take its address: Accept refuses once shutting down.)
    const bool alive = transports_.contains(transport);
    lock.unlock();
    if (alive) (transport->*step)();
    lock.lock();
    if (--posted_to_transports_ == 0) cv_.notify_all();
  });
}

void ServerImpl::Shutdown(std::chrono::milliseconds grace) {
  // On a reactor thread (a handler shutting its own server down, say) waiting could deadlock on
  // the very call that asked: the shutdown runs on a thread of its own and this returns.
  const bool on_reactor = ReactorPool::Current() != nullptr;
  if (shutting_down_.exchange(true, std::memory_order_acq_rel)) {
    if (!on_reactor) Wait();
    return;
  }
  if (on_reactor) {
    shutdown_thread_ = std::thread([this, grace] { RunShutdown(grace); });
    return;
  }
  RunShutdown(grace);
}

void ServerImpl::RunShutdown(std::chrono::milliseconds grace) {
  in_process_->Stop();  // in-process channels connect no more
  for (const auto& plugin : config_.plugins) {
    try {
      plugin->OnShutdown();
    } catch (...) {
      LogUserException("ServerPlugin::OnShutdown");
    }
  }
  for (auto& listener : listeners_) listener->Stop();
  listen_nodes_.clear();
  {
    std::unique_lock lock(mu_);
    for (const auto& entry : transports_) {
      PostToTransportLocked(entry.first, &ServerTransport::BeginShutdown);
    }
    const auto deadline = std::chrono::steady_clock::now() + grace;
    if (!cv_.wait_until(lock, deadline, [this] { return transports_.empty(); })) {
      // Grace is over: cancel what is left.
      for (const auto& entry : transports_) {
        PostToTransportLocked(entry.first, &ServerTransport::ForceClose);
      }
    }
    // The posted work runs before this object may go away: it locks mu_.
    cv_.wait(lock, [this] { return transports_.empty() && posted_to_transports_ == 0; });
    shutdown_done_ = true;
  }
  cv_.notify_all();
  owned_reactors_.reset();
}

void ServerImpl::Wait() {
  if (ReactorPool::Current() != nullptr) {
    Log(LogSeverity::kError,
        "Server::Wait() on a reactor thread would deadlock; it returns at once");
    return;
  }
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return shutdown_done_; });
}

}  // namespace rill::internal
