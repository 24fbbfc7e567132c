#include "rill/channel.h"

#include <condition_variable>
#include <mutex>

#include "rill/client_call.h"
#include "src/rpc/channel_impl.h"

namespace rill {

StatusOr<std::shared_ptr<Channel>> Channel::Create(std::string_view target,
                                                   ChannelOptions options) {
  StatusOr<internal::Address> address = internal::ParseAddress(target);
  if (!address.ok()) return address.status();
  auto impl = std::make_unique<internal::ChannelImpl>(std::string(target), std::move(*address),
                                                      std::move(options));
  return std::shared_ptr<Channel>(new Channel(std::move(impl)));
}

Channel::Channel(std::unique_ptr<internal::ChannelImpl> impl) : impl_(std::move(impl)) {}

Channel::~Channel() = default;

const std::string& Channel::target() const noexcept { return impl_->target(); }

bool Channel::WaitForConnected(Clock::time_point deadline) {
  return impl_->WaitForConnected(deadline);
}

namespace detail {

void StartUnaryCall(Channel& channel, const MethodDescriptor& method, ClientContext& context,
                    const MessageLite& request, MessageLite* response, UnaryCompletion done) {
  channel.impl().StartUnary(method, context, request, response, std::move(done));
}

Status BlockingUnaryCall(Channel& channel, const MethodDescriptor& method, ClientContext& context,
                         const MessageLite& request, MessageLite* response) {
  RILL_CHECK_MSG(!channel.impl().OnReactor(),
                 "a blocking call on the channel's own reactor thread would deadlock");
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
