// The client's streaming calls: the object behind ClientReaderWriter / ClientReader /
// ClientWriter, and their blocking forms.
#include <asio/post.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "rill/client_call.h"
#include "rill/log.h"
#include "src/rpc/channel_impl.h"
#include "src/rpc/client_call.h"
#include "src/rpc/codec.h"

namespace rill {

namespace internal {
namespace {

// Cancels the whole call when the operation's cancellation slot fires (any cancellation type:
// a gRPC call cannot be partly cancelled).
struct CancelCall {
  RefPtr<ClientCall> call;
  void operator()(asio::cancellation_type type) const {
    if (type != asio::cancellation_type::none) call->RequestCancel();
  }
};

template <typename Signature>
void InstallCancellation(detail::Completion<Signature>& done, ClientCall* call) {
  asio::cancellation_slot slot = done.cancellation_slot();
  if (slot.is_connected()) slot.template emplace<CancelCall>(CancelCall{RefPtr<ClientCall>(call)});
}

// Owns the user's side of a streaming call. Setting the call up (interceptors, headers) and
// encoding each message happen on the caller's thread, before the operation returns; the rest
// hops to the channel's reactor (inline when already there). The stream holds a reference to
// its call and to its channel, so both outlive the user's Channel when need be; dropping it
// never waits for the reactor.
class ClientStream final : public ClientStreamCore {
 public:
  ClientStream(ChannelImpl& channel, const MethodDescriptor& method, ClientContext& context)
      : channel_(&channel),
        call_(RefPtr<ClientCall>::Adopt(new ClientCall(channel))),
        context_(&context) {
    call_->InitStream(method, context);
    Status prepared = call_->Prepare();
    // The reactor's own reference to the call; it lets go once the call is over there.
    call_->Ref();
    OnReactor([channel = channel_.get(), call = call_.get(), prepared = std::move(prepared),
               holder = channel_->gate().Enter()]() mutable {
      call->Admit(std::move(holder));
      if (prepared.ok()) {
        channel->Dispatch(call);
      } else {
        call->Fail(std::move(prepared));
      }
    });
  }

  ~ClientStream() override {
    call_->DetachUser();
    OnReactor([call = call_] { call->OnUserGone(); });
  }

  void StartWrite(OutgoingMessage message, WriteOptions options, bool last,
                  detail::Completion<void(bool)> done) override {
    // Encoded now: the caller may change or free its message once this returns.
    BufferSlice bytes;
    Compressor* compressor = options.no_compression ? nullptr : call_->request_compressor();
    const ChannelOptions& o = channel_->options();
    Status status =
        message.prepared != nullptr
            ? EncodePrepared(*message.prepared, compressor, o.min_compress_size,
                             o.max_send_message_size, channel_->pool(), bytes)
            : EncodeMessage(*message.message, ClientPayloadAccess::request_field(*context_),
                            ClientPayloadAccess::TakeRequest(*context_), compressor,
                            o.min_compress_size, o.max_send_message_size, channel_->pool(),
                            bytes);
    InstallCancellation(done, call_.get());
    OnReactor([call = call_, bytes = std::move(bytes), status = std::move(status), last,
               done = std::move(done)]() mutable {
      call->StartWrite(std::move(bytes), std::move(status), last, std::move(done));
    });
  }
  void StartWritesDone(detail::Completion<void(bool)> done) override {
    InstallCancellation(done, call_.get());
    OnReactor([call = call_, done = std::move(done)]() mutable {
      call->StartWritesDone(std::move(done));
    });
  }
  void StartRead(google::protobuf::MessageLite* message,
                 detail::Completion<void(bool)> done) override {
    InstallCancellation(done, call_.get());
    OnReactor([call = call_, message, done = std::move(done)]() mutable {
      call->StartRead(message, std::move(done));
    });
  }
  void StartFinish(google::protobuf::MessageLite* response,
                   detail::Completion<void(Status)> done) override {
    InstallCancellation(done, call_.get());
    OnReactor([call = call_, response, done = std::move(done)]() mutable {
      call->StartFinish(response, std::move(done));
    });
  }

 private:
  template <typename Fn>
  void OnReactor(Fn&& fn) {
    if (channel_->OnReactor()) {
      fn();
    } else {
      asio::post(channel_->io_context(), std::forward<Fn>(fn));
    }
  }

  RefPtr<ChannelImpl> channel_;
  RefPtr<ClientCall> call_;
  ClientContext* context_;  // the caller's; writes take its request payload
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

// A blocking operation on a reactor thread would stall everything that reactor serves (and
// deadlock when the operation needs it): it fails at once instead.
bool RefuseBlockingOnReactor(const char* what) {
  if (ReactorPool::Current() == nullptr) return false;
  Log(LogSeverity::kError, std::string(what) +
                               " called on a reactor thread, where it would block; it fails "
                               "at once (use the asynchronous form)");
  return true;
}

Status BlockingOnReactorStatus() {
  return Status(StatusCode::kFailedPrecondition,
                "a blocking call on a reactor thread would stall the reactor; use the "
                "asynchronous form");
}

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
  return ChannelAccess::Impl(channel).StartStream(method, context);
}

bool ClientStreamOps::BlockingWriteMessage(internal::OutgoingMessage message,
                                           WriteOptions options, bool last) {
  if (internal::RefuseBlockingOnReactor("a blocking stream Write()")) return false;
  internal::BlockingResult<bool> result;
  core_->StartWrite(message, options, last, Completion<void(bool)>(result.Handler()));
  return result.Wait();
}

bool ClientStreamOps::BlockingReadMessage(MessageLite* message) {
  if (internal::RefuseBlockingOnReactor("a blocking stream Read()")) return false;
  internal::BlockingResult<bool> result;
  core_->StartRead(message, Completion<void(bool)>(result.Handler()));
  return result.Wait();
}

bool ClientStreamOps::BlockingWritesDone() {
  if (internal::RefuseBlockingOnReactor("a blocking stream WritesDone()")) return false;
  internal::BlockingResult<bool> result;
  core_->StartWritesDone(Completion<void(bool)>(result.Handler()));
  return result.Wait();
}

Status ClientStreamOps::BlockingFinish(MessageLite* response) {
  if (internal::RefuseBlockingOnReactor("a blocking stream Finish()")) {
    return internal::BlockingOnReactorStatus();
  }
  internal::BlockingResult<Status> result;
  core_->StartFinish(response, Completion<void(Status)>(result.Handler()));
  return result.Wait();
}

}  // namespace detail
}  // namespace rill
