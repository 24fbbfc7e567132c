#include "src/rpc/channel_shards.h"

#include <algorithm>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <condition_variable>
#include <list>
#include <mutex>
#include <optional>

#include "rill/log.h"
#include "rill/reactor_pool.h"
#include "src/rpc/channel_impl.h"

namespace rill::internal {
namespace {

// The best of the shards' states (see the header); SHUTDOWN only once every shard is.
ConnectivityState Combine(const std::vector<ConnectivityState>& states) {
  bool connecting = false;
  bool failing = false;
  bool idle = false;
  for (ConnectivityState state : states) {
    switch (state) {
      case ConnectivityState::kReady:
        return ConnectivityState::kReady;
      case ConnectivityState::kConnecting:
        connecting = true;
        break;
      case ConnectivityState::kTransientFailure:
        failing = true;
        break;
      case ConnectivityState::kIdle:
        idle = true;
        break;
      case ConnectivityState::kShutdown:
        break;
    }
  }
  if (connecting) return ConnectivityState::kConnecting;
  if (failing) return ConnectivityState::kTransientFailure;
  if (idle) return ConnectivityState::kIdle;
  return ConnectivityState::kShutdown;
}

}  // namespace

// The shards' published states and the set's watchers. Shards report from their reactors;
// waiters block on cv_; asynchronous watchers are completed, and their deadline timers run, on
// the first shard's ("lead") reactor.
//
// The board does not own the lead: it reaches it only from the user's thread (the user's
// Channel keeps the lead alive) or for a watcher that is still listed, and while a watcher is
// listed something holds the lead's gate for it (the handler that arms its timer, then the
// timer's handler), so the lead has not drained.
class ChannelShards::Board final : public ShardStateListener,
                                   public std::enable_shared_from_this<Board> {
 public:
  explicit Board(size_t count) : states_(count, ConnectivityState::kIdle) {}

  // Before any shard can change state.
  void set_lead(ChannelImpl* lead) noexcept { lead_ = lead; }

  void OnShardState(size_t shard, ConnectivityState state) override {
    std::lock_guard lock(mu_);
    states_[shard] = state;
    cv_.notify_all();  // WaitForAllReady() looks at each shard
    const ConnectivityState combined = Combine(states_);
    if (combined == state_) return;
    state_ = combined;
    // Every listed watcher saw the state just replaced: each completes, from a fresh handler
    // (this runs inside a shard's code).
    for (std::shared_ptr<Watcher>& watcher : watchers_) {
      asio::post(lead_->io_context(),
                 [watcher, done = std::move(watcher->done),
                  holder = lead_->gate().Enter()]() mutable {
                   if (watcher->timer) watcher->timer->cancel();
                   done(true);
                 });
    }
    watchers_.clear();
  }

  [[nodiscard]] ConnectivityState state() {
    std::lock_guard lock(mu_);
    return state_;
  }

  bool WaitForChange(ConnectivityState last_observed, Clock::time_point deadline) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline, [&] { return state_ != last_observed; });
  }

  // True once every shard is READY; false when the deadline passed or a shard shut down.
  bool WaitForAllReady(Clock::time_point deadline) {
    auto all_ready = [this] {
      return std::all_of(states_.begin(), states_.end(), [](ConnectivityState state) {
        return state == ConnectivityState::kReady;
      });
    };
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline,
                          [&] {
                            return all_ready() ||
                                   std::find(states_.begin(), states_.end(),
                                             ConnectivityState::kShutdown) != states_.end();
                          }) &&
           all_ready();
  }

  // From the user's thread (the lead is alive).
  void Watch(ConnectivityState last_observed, Clock::time_point deadline,
             detail::Completion<void(bool)> done) {
    std::lock_guard lock(mu_);
    ChannelImpl* lead = lead_;
    if (state_ != last_observed) {
      asio::post(lead->io_context(),
                 [done = std::move(done), holder = lead->gate().Enter()]() mutable {
                   done(true);
                 });
      return;
    }
    auto watcher = std::make_shared<Watcher>();
    watcher->done = std::move(done);
    watchers_.push_back(watcher);
    // The timer is made and armed on the lead's reactor, where it is cancelled too; a watcher
    // already completed by then gets none.
    asio::post(lead->io_context(), [board = shared_from_this(), watcher, deadline, lead,
                                    holder = lead->gate().Enter()]() mutable {
      {
        std::lock_guard listed(board->mu_);
        if (std::find(board->watchers_.begin(), board->watchers_.end(), watcher) ==
            board->watchers_.end()) {
          return;
        }
      }
      watcher->timer.emplace(lead->io_context());
      watcher->timer->expires_at(deadline);
      watcher->timer->async_wait([board = std::move(board), watcher,
                                  holder = std::move(holder)](const asio::error_code& ec) {
        if (ec) return;  // completed by a state change
        detail::Completion<void(bool)> expired;
        {
          std::lock_guard expiring(board->mu_);
          auto it = std::find(board->watchers_.begin(), board->watchers_.end(), watcher);
          if (it == board->watchers_.end()) return;  // a state change completes it
          expired = std::move(watcher->done);
          board->watchers_.erase(it);
        }
        expired(false);
      });
    });
  }

 private:
  struct Watcher {
    detail::Completion<void(bool)> done;     // taken by whoever unlists the watcher
    std::optional<asio::steady_timer> timer;  // lead-reactor-confined
  };

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ConnectivityState> states_;                // guarded by mu_
  ConnectivityState state_ = ConnectivityState::kIdle;   // guarded by mu_
  std::list<std::shared_ptr<Watcher>> watchers_;         // guarded by mu_
  ChannelImpl* lead_ = nullptr;
};

size_t ChannelShards::CountFor(const ChannelOptions& options) noexcept {
  const size_t pool = options.reactors != nullptr ? options.reactors->size() : 0;
  size_t count = options.reactor_shards;
  if (count == 0) count = pool == 0 ? 1 : pool;
  if (pool != 0) count = std::min(count, pool);
  return count;
}

StatusOr<std::unique_ptr<ChannelShards>> ChannelShards::Create(
    std::string_view target, const ChannelOptions& options,
    const std::shared_ptr<ChannelCredentials>& credentials, size_t count) {
  std::unique_ptr<ChannelShards> set(new ChannelShards());
  set->board_ = std::make_shared<Board>(count);
  // Consecutive reactors of the pool from the one its round robin gives next; without a pool
  // every shard starts a reactor thread of its own.
  size_t first = 0;
  if (ReactorPool* pool = options.reactors) {
    asio::io_context* next = &pool->Next();
    for (size_t i = 0; i < pool->size(); ++i) {
      if (&pool->reactor(i) == next) first = i;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    ShardSetup setup;
    if (options.reactors != nullptr) {
      setup.reactor = &options.reactors->reactor((first + i) % options.reactors->size());
    }
    setup.index = i;
    setup.count = count;
    setup.listener = set->board_;
    if (i > 0) setup.retry_throttle = set->shards_[0]->shared_retry_throttle();
    StatusOr<ChannelImpl*> shard = ChannelImpl::Create(target, options, credentials, setup);
    if (!shard.ok()) {
      set->Close(/*wait=*/ReactorPool::Current() == nullptr);
      return shard.status();
    }
    if (i == 0) set->board_->set_lead(*shard);
    set->shards_.push_back(*shard);
    set->reactors_.push_back(&(*shard)->io_context());
  }
  return set;
}

ChannelShards::~ChannelShards() {
  for (ChannelImpl* shard : shards_) shard->Unref();
}

ChannelImpl& ChannelShards::Pick() noexcept {
  if (asio::io_context* current = ReactorPool::Current()) {
    for (size_t i = 0; i < reactors_.size(); ++i) {
      if (reactors_[i] == current) return *shards_[i];
    }
  }
  return *shards_[next_.fetch_add(1, std::memory_order_relaxed) % shards_.size()];
}

ConnectivityState ChannelShards::GetState(bool try_to_connect) {
  const ConnectivityState state = board_->state();
  if (try_to_connect) {
    for (ChannelImpl* shard : shards_) (void)shard->GetState(/*try_to_connect=*/true);
  }
  return state;
}

bool ChannelShards::WaitForStateChange(ConnectivityState last_observed,
                                       Clock::time_point deadline) {
  if (ReactorPool::Current() != nullptr) {
    Log(LogSeverity::kError,
        "Channel::WaitForStateChange() on a reactor thread would stall it; it returns false");
    return false;
  }
  return board_->WaitForChange(last_observed, deadline);
}

void ChannelShards::NotifyOnStateChange(ConnectivityState last_observed,
                                        Clock::time_point deadline,
                                        detail::Completion<void(bool)> done) {
  board_->Watch(last_observed, deadline, std::move(done));
}

bool ChannelShards::WaitForConnected(Clock::time_point deadline) {
  if (ReactorPool::Current() != nullptr) {
    Log(LogSeverity::kError,
        "Channel::WaitForConnected() on a reactor thread would stall it; it returns false");
    return false;
  }
  for (ChannelImpl* shard : shards_) shard->Connect();
  return board_->WaitForAllReady(deadline);
}

void ChannelShards::Close(bool wait) {
  // Every shard starts closing before any is waited for: they drain side by side.
  for (ChannelImpl* shard : shards_) shard->StartClose(wait);
  if (!wait) return;
  for (ChannelImpl* shard : shards_) shard->AwaitClosed();
}

}  // namespace rill::internal
