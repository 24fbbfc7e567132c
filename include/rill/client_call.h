// Client calls: the functions generated stubs call, and the client-side stream types.
//
// Generated stubs wrap these; users normally see only the stub methods:
//
//   // Blocking (must not run on a reactor thread):
//   rill::Status s = stub.SayHello(ctx, request, &reply);
//   // Any Asio completion token; with use_awaitable inside a coroutine:
//   rill::Status s = co_await stub.SayHello(ctx, request, &reply, asio::use_awaitable);
//   stub.SayHello(ctx, request, &reply, [](rill::Status s) { ... });
//
//   // Streams:
//   auto stream = stub.RouteChat(ctx);
//   co_await stream->Write(note);
//   while (co_await stream->Read(&reply)) ...
//   rill::Status s = co_await stream->Finish();
//
// Contracts of every operation here:
//   - Completion: on the handler's associated executor (inline on the channel's reactor for a
//     plain callback), never from inside the starting call, never inside the HTTP/2 session's
//     callbacks. An exception a completion throws is logged and goes no further (see
//     rill/completion.h).
//   - Buffers: request messages are serialized before the starting call (or Write()) returns;
//     the caller may change or free them at once. (With a deferred token such as
//     asio::use_awaitable, "starting" is the co_await.) `context` and `response` must stay alive
//     until the call completes; a stream's context until the stream object is destroyed.
//   - Cancellation: ClientContext::TryCancel(), the deadline, or the handler's cancellation slot
//     (any cancellation type) cancels the whole RPC: it completes with CANCELLED (or
//     DEADLINE_EXCEEDED) and the server sees RST_STREAM(CANCEL). Destroying a stream object
//     cancels an unfinished call; its pending operations still complete (false / CANCELLED).
//   - Statuses: what the server sent; UNAVAILABLE when no connection could carry the call;
//     CANCELLED when the Channel was destroyed meanwhile; RESOURCE_EXHAUSTED for a message over
//     a size limit; UNKNOWN when a client interceptor threw; FAILED_PRECONDITION for a blocking
//     call made on a reactor thread (where it would stall the reactor).
//
// Thread safety: a call may be started from any thread. A stream allows one outstanding Read(),
// one outstanding Write()/WritesDone() and one Finish() at a time.
#ifndef RILL_CLIENT_CALL_H_
#define RILL_CLIENT_CALL_H_

#include <asio/async_result.hpp>
#include <memory>
#include <utility>

#include "rill/awaitable.h"
#include "rill/channel.h"
#include "rill/client_context.h"
#include "rill/completion.h"
#include "rill/prepared_message.h"
#include "rill/server_stream.h"
#include "rill/service.h"
#include "rill/status.h"

namespace rill {

// Names a method for the client: generated stubs hold one per method.
struct MethodDescriptor {
  const char* path;  // "/package.Service/Method"
  RpcKind kind;
};

namespace detail {

using UnaryCompletion = Completion<void(Status)>;

// Starts a unary call; `done` runs once with its status.
void StartUnaryCall(Channel& channel, const MethodDescriptor& method, ClientContext& context,
                    const MessageLite& request, MessageLite* response, UnaryCompletion done);

// Runs a unary call to completion on the calling thread (not a reactor thread).
Status BlockingUnaryCall(Channel& channel, const MethodDescriptor& method, ClientContext& context,
                         const MessageLite& request, MessageLite* response);

template <typename CompletionToken>
auto AsyncUnaryCall(Channel& channel, const MethodDescriptor& method, ClientContext& context,
                    const MessageLite& request, MessageLite* response, CompletionToken&& token) {
  return asio::async_initiate<CompletionToken, void(Status)>(
      [](auto handler, Channel* ch, const MethodDescriptor* m, ClientContext* ctx,
         const MessageLite* req, MessageLite* resp) {
        StartUnaryCall(*ch, *m, *ctx, *req, resp, UnaryCompletion(std::move(handler)));
      },
      token, &channel, &method, &context, &request, response);
}

}  // namespace detail

namespace internal {

// The untyped client stream behind the typed wrappers; implemented by the channel.
class ClientStreamCore {
 public:
  virtual ~ClientStreamCore() = default;
  // Each operation completes with false when the stream is over (call Finish() for the status).
  virtual void StartWrite(OutgoingMessage message, WriteOptions options, bool last,
                          detail::Completion<void(bool)> done) = 0;
  virtual void StartWritesDone(detail::Completion<void(bool)> done) = 0;
  virtual void StartRead(google::protobuf::MessageLite* message,
                         detail::Completion<void(bool)> done) = 0;
  // Completes with the call's status once the server has ended the call (or it failed). With
  // `response`, half-closes first and decodes the one response message into it.
  virtual void StartFinish(google::protobuf::MessageLite* response,
                           detail::Completion<void(Status)> done) = 0;
};

}  // namespace internal

namespace detail {

std::unique_ptr<internal::ClientStreamCore> StartClientStream(Channel& channel,
                                                              const MethodDescriptor& method,
                                                              ClientContext& context);

// Operations shared by the typed streams.
class ClientStreamOps {
 public:
  explicit ClientStreamOps(std::unique_ptr<internal::ClientStreamCore> core)
      : core_(std::move(core)) {}

  template <typename Token = decltype(asio::use_awaitable)>
  auto WriteMessage(internal::OutgoingMessage message, WriteOptions options, bool last,
                    Token&& token = {}) {
    return asio::async_initiate<Token, void(bool)>(
        [](auto handler, internal::ClientStreamCore* core, internal::OutgoingMessage m,
           WriteOptions o, bool l) {
          core->StartWrite(m, o, l, Completion<void(bool)>(std::move(handler)));
        },
        token, core_.get(), message, options, last);
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto ReadMessage(MessageLite* message, Token&& token = {}) {
    return asio::async_initiate<Token, void(bool)>(
        [](auto handler, internal::ClientStreamCore* core, MessageLite* m) {
          core->StartRead(m, Completion<void(bool)>(std::move(handler)));
        },
        token, core_.get(), message);
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto DoWritesDone(Token&& token = {}) {
    return asio::async_initiate<Token, void(bool)>(
        [](auto handler, internal::ClientStreamCore* core) {
          core->StartWritesDone(Completion<void(bool)>(std::move(handler)));
        },
        token, core_.get());
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto DoFinish(MessageLite* response, Token&& token = {}) {
    return asio::async_initiate<Token, void(Status)>(
        [](auto handler, internal::ClientStreamCore* core, MessageLite* r) {
          core->StartFinish(r, Completion<void(Status)>(std::move(handler)));
        },
        token, core_.get(), response);
  }

  bool BlockingWriteMessage(internal::OutgoingMessage message, WriteOptions options, bool last);
  bool BlockingReadMessage(MessageLite* message);
  bool BlockingWritesDone();
  Status BlockingFinish(MessageLite* response = nullptr);

 private:
  std::unique_ptr<internal::ClientStreamCore> core_;
};

}  // namespace detail

// Bidirectional stream: the client writes W and reads R.
template <typename W, typename R>
class ClientReaderWriter {
 public:
  explicit ClientReaderWriter(std::unique_ptr<internal::ClientStreamCore> core)
      : ops_(std::move(core)) {}

  // Awaitable forms (default token asio::use_awaitable; any Asio token works).
  template <typename Token = decltype(asio::use_awaitable)>
  auto Write(const W& message, WriteOptions options = {}, Token&& token = {}) {
    return ops_.WriteMessage({.message = &message}, options, false, std::forward<Token>(token));
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto WriteLast(const W& message, WriteOptions options = {}, Token&& token = {}) {
    return ops_.WriteMessage({.message = &message}, options, true, std::forward<Token>(token));
  }
  // A message prepared once (see PreparedMessage): sent without serializing or copying it.
  template <typename Token = decltype(asio::use_awaitable)>
  auto Write(const PreparedMessage& message, WriteOptions options = {}, Token&& token = {}) {
    return ops_.WriteMessage({.prepared = &message}, options, false, std::forward<Token>(token));
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto WriteLast(const PreparedMessage& message, WriteOptions options = {}, Token&& token = {}) {
    return ops_.WriteMessage({.prepared = &message}, options, true, std::forward<Token>(token));
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto Read(R* message, Token&& token = {}) {
    return ops_.ReadMessage(message, std::forward<Token>(token));
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto WritesDone(Token&& token = {}) {
    return ops_.DoWritesDone(std::forward<Token>(token));
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto Finish(Token&& token = {}) {
    return ops_.DoFinish(nullptr, std::forward<Token>(token));
  }

  // Blocking forms (not on a reactor thread).
  bool BlockingWrite(const W& message, WriteOptions options = {}) {
    return ops_.BlockingWriteMessage({.message = &message}, options, false);
  }
  bool BlockingWriteLast(const W& message, WriteOptions options = {}) {
    return ops_.BlockingWriteMessage({.message = &message}, options, true);
  }
  bool BlockingWrite(const PreparedMessage& message, WriteOptions options = {}) {
    return ops_.BlockingWriteMessage({.prepared = &message}, options, false);
  }
  bool BlockingWriteLast(const PreparedMessage& message, WriteOptions options = {}) {
    return ops_.BlockingWriteMessage({.prepared = &message}, options, true);
  }
  bool BlockingRead(R* message) { return ops_.BlockingReadMessage(message); }
  bool BlockingWritesDone() { return ops_.BlockingWritesDone(); }
  Status BlockingFinish() { return ops_.BlockingFinish(); }

 private:
  detail::ClientStreamOps ops_;
};

// Server streaming: the request was sent at creation; the client reads R.
template <typename R>
class ClientReader {
 public:
  explicit ClientReader(std::unique_ptr<internal::ClientStreamCore> core)
      : ops_(std::move(core)) {}

  template <typename Token = decltype(asio::use_awaitable)>
  auto Read(R* message, Token&& token = {}) {
    return ops_.ReadMessage(message, std::forward<Token>(token));
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto Finish(Token&& token = {}) {
    return ops_.DoFinish(nullptr, std::forward<Token>(token));
  }
  bool BlockingRead(R* message) { return ops_.BlockingReadMessage(message); }
  Status BlockingFinish() { return ops_.BlockingFinish(); }

  // For generated code: sends the single request and half-closes. The request is serialized
  // before this returns; a request that cannot be sent (over the send limit, say) fails the
  // call, and Read()/Finish() report it.
  void SendRequest(const google::protobuf::MessageLite& request) {
    ops_.WriteMessage({.message = &request}, WriteOptions{}, true, [](bool) {});
  }

 private:
  detail::ClientStreamOps ops_;
};

// Client streaming: the client writes W; Finish() delivers the response into the message given
// at creation, and the status.
template <typename W>
class ClientWriter {
 public:
  ClientWriter(std::unique_ptr<internal::ClientStreamCore> core,
               google::protobuf::MessageLite* response)
      : ops_(std::move(core)), response_(response) {}

  template <typename Token = decltype(asio::use_awaitable)>
  auto Write(const W& message, WriteOptions options = {}, Token&& token = {}) {
    return ops_.WriteMessage({.message = &message}, options, false, std::forward<Token>(token));
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto Write(const PreparedMessage& message, WriteOptions options = {}, Token&& token = {}) {
    return ops_.WriteMessage({.prepared = &message}, options, false, std::forward<Token>(token));
  }
  template <typename Token = decltype(asio::use_awaitable)>
  auto WritesDone(Token&& token = {}) {
    return ops_.DoWritesDone(std::forward<Token>(token));
  }
  // Half-closes if not done yet, reads the response into the message given at creation, and
  // completes with the status (any completion token).
  template <typename Token = decltype(asio::use_awaitable)>
  auto Finish(Token&& token = {}) {
    return ops_.DoFinish(response_, std::forward<Token>(token));
  }
  bool BlockingWrite(const W& message, WriteOptions options = {}) {
    return ops_.BlockingWriteMessage({.message = &message}, options, false);
  }
  bool BlockingWrite(const PreparedMessage& message, WriteOptions options = {}) {
    return ops_.BlockingWriteMessage({.prepared = &message}, options, false);
  }
  bool BlockingWritesDone() { return ops_.BlockingWritesDone(); }
  Status BlockingFinish() { return ops_.BlockingFinish(response_); }

 private:
  detail::ClientStreamOps ops_;
  google::protobuf::MessageLite* response_;
};

}  // namespace rill

#endif  // RILL_CLIENT_CALL_H_
