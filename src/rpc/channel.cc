#include "rill/channel.h"

#include <condition_variable>
#include <mutex>

#include "rill/client_call.h"
#include "rill/log.h"
#include "rill/reactor_pool.h"
#include "src/rpc/channel_impl.h"
#include "src/rpc/channel_shards.h"

namespace rill {

StatusOr<std::shared_ptr<Channel>> Channel::Create(std::string_view target,
                                                   ChannelOptions options) {
  return Create(target, nullptr, std::move(options));
}

StatusOr<std::shared_ptr<Channel>> Channel::Create(
    std::string_view target, std::shared_ptr<ChannelCredentials> credentials,
    ChannelOptions options) {
  if (const size_t count = internal::ChannelShards::CountFor(options); count > 1) {
    StatusOr<std::unique_ptr<internal::ChannelShards>> shards =
        internal::ChannelShards::Create(target, options, credentials, count);
    if (!shards.ok()) return shards.status();
    return std::shared_ptr<Channel>(new Channel(std::move(*shards)));
  }
  StatusOr<internal::ChannelImpl*> impl =
      internal::ChannelImpl::Create(target, std::move(options), std::move(credentials));
  if (!impl.ok()) return impl.status();
  return std::shared_ptr<Channel>(new Channel(*impl));
}

Channel::Channel(internal::ChannelImpl* impl) : impl_(impl) {}

Channel::Channel(std::unique_ptr<internal::ChannelShards> shards)
    : impl_(&shards->shard(0)), shards_(std::move(shards)) {}

Channel::~Channel() {
  // Off the reactors, wait until the channel's calls are cancelled and its connections closed:
  // when this returns, nothing of the channel runs any more (but what streams still held need),
  // and its pool and reactors may go. On a reactor thread that wait could deadlock: the same
  // happens in the background.
  const bool wait = ReactorPool::Current() == nullptr;
  if (shards_ != nullptr) {
    shards_->Close(wait);
    shards_.reset();
    return;
  }
  impl_->Close(wait);
  impl_->Unref();
}

internal::ChannelImpl& Channel::PickShard() noexcept { return shards_->Pick(); }

const std::string& Channel::target() const noexcept { return impl_->target(); }

bool Channel::WaitForConnected(Clock::time_point deadline) {
  if (shards_ != nullptr) return shards_->WaitForConnected(deadline);
  return impl_->WaitForConnected(deadline);
}

ConnectivityState Channel::GetState(bool try_to_connect) {
  if (shards_ != nullptr) return shards_->GetState(try_to_connect);
  return impl_->GetState(try_to_connect);
}

bool Channel::WaitForStateChange(ConnectivityState last_observed, Clock::time_point deadline) {
  if (shards_ != nullptr) return shards_->WaitForStateChange(last_observed, deadline);
  return impl_->WaitForStateChange(last_observed, deadline);
}

void Channel::NotifyOnStateChange(ConnectivityState last_observed, Clock::time_point deadline,
                                  detail::Completion<void(bool)> done) {
  if (shards_ != nullptr) {
    shards_->NotifyOnStateChange(last_observed, deadline, std::move(done));
    return;
  }
  impl_->NotifyOnStateChange(last_observed, deadline, std::move(done));
}

std::string_view ToString(ConnectivityState state) noexcept {
  switch (state) {
    case ConnectivityState::kIdle:
      return "IDLE";
    case ConnectivityState::kConnecting:
      return "CONNECTING";
    case ConnectivityState::kReady:
      return "READY";
    case ConnectivityState::kTransientFailure:
      return "TRANSIENT_FAILURE";
    case ConnectivityState::kShutdown:
      return "SHUTDOWN";
  }
  return "UNKNOWN";
}

namespace detail {
namespace {

struct CancelContext {
  ClientContext* context;
  void operator()(asio::cancellation_type type) const {
    if (type != asio::cancellation_type::none) context->TryCancel();
  }
};

}  // namespace

void StartUnaryCall(Channel& channel, const MethodDescriptor& method, ClientContext& context,
                    const MessageLite& request, MessageLite* response, UnaryCompletion done) {
  // Cancelling through the handler's slot cancels the call as TryCancel() does (the context
  // outlives the call, and the slot is cleared before the completion runs).
  asio::cancellation_slot slot = done.cancellation_slot();
  if (slot.is_connected()) {
    slot.emplace<CancelContext>(CancelContext{&context});
  }
  ChannelAccess::Impl(channel).StartUnary(method, context, request, response, std::move(done));
}

Status BlockingUnaryCall(Channel& channel, const MethodDescriptor& method, ClientContext& context,
                         const MessageLite& request, MessageLite* response) {
  if (ReactorPool::Current() != nullptr) {
    Log(LogSeverity::kError, std::string("a blocking call of ") + method.path +
                                 " on a reactor thread would stall the reactor; it fails at "
                                 "once (use the asynchronous form)");
    return Status(StatusCode::kFailedPrecondition,
                  "a blocking call on a reactor thread would stall the reactor; use the "
                  "asynchronous form");
  }
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Status status;
  } waiter;
  StartUnaryCall(channel, method, context, request, response,
                 UnaryCompletion([&waiter](Status status) {
                   std::lock_guard lock(waiter.mu);
                   waiter.status = std::move(status);
                   waiter.done = true;
                   waiter.cv.notify_one();
                 }));
  std::unique_lock lock(waiter.mu);
  waiter.cv.wait(lock, [&] { return waiter.done; });
  return std::move(waiter.status);
}

}  // namespace detail
}  // namespace rill
