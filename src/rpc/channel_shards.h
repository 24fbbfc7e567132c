// ChannelShards: a user's Channel made of several ChannelImpls ("shards"), each on a reactor of
// its own, so that one channel's calls run on several cores (ChannelOptions::reactor_shards).
//
// Each shard is a complete channel: its own resolver run, load-balancing policy, subchannels
// and connections (so K connections to every address). Pick() spreads calls over the shards
// without a lock: a call started on one of the shards' reactor threads stays on that thread,
// any other goes to the next shard in turn. What is channel-wide stays so: the shards share the
// retry throttle and each holds a K-th of the retry buffer budget; the connectivity state is
// the best of theirs (READY if any is READY, else CONNECTING if any is, else
// TRANSIENT_FAILURE if any is, IDLE when all are, SHUTDOWN once all are); Close() closes all.
// In channelz each shard is a channel of its own, named "<target> (shard i of K)".
//
// Ownership: the user's Channel owns the set, which holds one reference to each shard (dropped
// by the destructor, after Close()). The shards share the state board with the set; the board
// never owns a shard.
//
// Thread safety: thread-safe.
#ifndef RILL_SRC_RPC_CHANNEL_SHARDS_H_
#define RILL_SRC_RPC_CHANNEL_SHARDS_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "rill/channel.h"
#include "rill/completion.h"
#include "rill/status_or.h"

namespace asio {
class io_context;
}  // namespace asio

namespace rill::internal {

class ChannelImpl;

class ChannelShards {
 public:
  using Clock = std::chrono::steady_clock;

  // How many shards `options` ask for: reactor_shards (0: one per reactor of the pool, or one
  // without a pool), at most the pool's size.
  static size_t CountFor(const ChannelOptions& options) noexcept;

  // `count` (> 1) shards to `target`, or the error the first one's creation gave.
  static StatusOr<std::unique_ptr<ChannelShards>> Create(
      std::string_view target, const ChannelOptions& options,
      const std::shared_ptr<ChannelCredentials>& credentials, size_t count);
  // Drops the references to the shards; Close() must have been called.
  ~ChannelShards();
  ChannelShards(const ChannelShards&) = delete;
  ChannelShards& operator=(const ChannelShards&) = delete;

  [[nodiscard]] size_t size() const noexcept { return shards_.size(); }
  [[nodiscard]] ChannelImpl& shard(size_t i) const noexcept { return *shards_[i]; }
  // The shard for a call started on the calling thread.
  [[nodiscard]] ChannelImpl& Pick() noexcept;

  // Connectivity of the set (rill/channel.h).
  [[nodiscard]] ConnectivityState GetState(bool try_to_connect);
  bool WaitForStateChange(ConnectivityState last_observed, Clock::time_point deadline);
  void NotifyOnStateChange(ConnectivityState last_observed, Clock::time_point deadline,
                           detail::Completion<void(bool)> done);
  // Asks every shard to connect and waits until each is READY (true) or the deadline passed
  // (false); false at once on a reactor thread.
  bool WaitForConnected(Clock::time_point deadline);

  // Closes every shard (ChannelImpl::Close); with `wait` (never on a reactor thread) returns
  // once all of them have drained.
  void Close(bool wait);

 private:
  class Board;

  ChannelShards() = default;

  std::vector<ChannelImpl*> shards_;           // one reference each
  std::vector<asio::io_context*> reactors_;    // shards_[i] runs on reactors_[i]
  std::atomic<size_t> next_{0};                // round robin for calls from other threads
  std::shared_ptr<Board> board_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_CHANNEL_SHARDS_H_
