// The client's streaming calls: the object behind ClientReaderWriter / ClientReader /
// ClientWriter, and their blocking forms.
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>

#include "rill/client_call.h"
#include "src/rpc/channel_impl.h"
#include "src/rpc/client_call.h"

namespace rill {
namespace internal {
namespace {

// Owns the user's side of a streaming call. Every operation hops to the channel's reactor
// (inline when already there); the ClientCall lives on the reactor and deletes itself once the
// call completed, its stream closed and this object is gone.
class ClientStream final : public ClientStreamCore {
 public:
  ClientStream(ChannelImpl& channel, const MethodDescriptor& method, ClientContext& context)
      : channel_(channel), call_(new ClientCall(channel)) {
    call_->pooled = false;
    OnReactor([channel = &channel_, call = call_, method = &method, context = &context] {
      channel->AdoptCall();
      call->InitStream(*method, *context);
      if (call->Prepare()) channel->Dispatch(call);
    });
  }
  // Waits for the reactor when called elsewhere: cancelling an unfinished call still uses its
  // ClientContext (interceptors, the context's call pointer), which the caller may destroy right
  // after the stream.
  ~ClientStream() override {
    if (channel_.OnReactor()) {
      call_->OnUserGone();
      return;
    }
    std::promise<void> gone;
    asio::post(channel_.io_context(), [call = call_, &gone] {
      call->OnUserGone();
      gone.set_value();
    });
    gone.get_future().wait();
  }

  void StartWrite(OutgoingMessage message, WriteOptions options, bool last,
                  detail::Completion<void(bool)> done) override {
    OnReactor([call = call_, message, last, no_compression = options.no_compression,
               done = std::move(done)]() mutable {
      call->StartWrite(message, last, no_compression, std::move(done));
    });
  }
  void StartWritesDone(detail::Completion<void(bool)> done) override {
    OnReactor([call = call_, done = std::move(done)]() mutable {
      call->StartWritesDone(std::move(done));
    });
  }
  void StartRead(google::protobuf::MessageLite* message,
                 detail::Completion<void(bool)> done) override {
    OnReactor([call = call_, message, done = std::move(done)]() mutable {
      call->StartRead(message, std::move(done));
    });
  }
  void StartFinish(detail::Completion<void(Status)> done) override {
    OnReactor([call = call_, done = std::move(done)]() mutable {
      call->StartFinish(std::move(done));
    });
  }

 private:
  template <typename Fn>
  void OnReactor(Fn&& fn) {
    if (channel_.OnReactor()) {
      fn();
    } else {
      asio::post(channel_.io_context(), std::forward<Fn>(fn));
    }
  }

  ChannelImpl& channel_;
  ClientCall* call_;
};

// Waits on the calling thread for one completion.
template <typename T>
class BlockingResult {
 public:
  auto Handler() {
    return [this](T value) {
      std::lock_guard lock(mu_);
      value_.emplace(std::move(value));
      cv_.notify_one();
    };
  }
  T Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return value_.has_value(); });
    return std::move(*value_);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<T> value_;
};

}  // namespace

std::unique_ptr<ClientStreamCore> ChannelImpl::StartStream(const MethodDescriptor& method,
                                                           ClientContext& context) {
  return std::make_unique<ClientStream>(*this, method, context);
}

}  // namespace internal

namespace detail {

std::unique_ptr<internal::ClientStreamCore> StartClientStream(Channel& channel,
                                                              const MethodDescriptor& method,
                                                              ClientContext& context) {
  return channel.impl().StartStream(method, context);
}

bool ClientStreamOps::BlockingWriteMessage(internal::OutgoingMessage message,
                                           WriteOptions options, bool last) {
  internal::BlockingResult<bool> result;
  core_->StartWrite(message, options, last, Completion<void(bool)>(result.Handler()));
  return result.Wait();
}

bool ClientStreamOps::BlockingReadMessage(MessageLite* message) {
  internal::BlockingResult<bool> result;
  core_->StartRead(message, Completion<void(bool)>(result.Handler()));
  return result.Wait();
}

bool ClientStreamOps::BlockingWritesDone() {
  internal::BlockingResult<bool> result;
  core_->StartWritesDone(Completion<void(bool)>(result.Handler()));
  return result.Wait();
}

Status ClientStreamOps::BlockingFinish() {
  internal::BlockingResult<Status> result;
  core_->StartFinish(Completion<void(Status)>(result.Handler()));
  return result.Wait();
}

}  // namespace detail
}  // namespace rill
