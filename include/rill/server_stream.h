// Server-side streams: what streaming handlers read requests from and write responses to.
//
//   rill::Awaitable<rill::Status> RouteChat(rill::ServerContext& ctx,
//                                           rill::ServerReaderWriter<RouteNote, RouteNote>& stream) {
//     RouteNote note;
//     while (co_await stream.Read(&note)) {
//       if (!co_await stream.Write(note)) break;   // the call ended under us
//     }
//     co_return rill::Status();
//   }
//
// Read() completes with the next message, or false at the end of the client's stream (or when the
// call ended). Write() completes once the message is queued within the stream's write quota: a
// handler that writes faster than the client reads is suspended, so nothing queues without
// bound; it completes false when the call ended. The status is the handler's return value.
//
// Thread safety: reactor-confined. At most one Read() and one Write() may be outstanding.
#ifndef RILL_SERVER_STREAM_H_
#define RILL_SERVER_STREAM_H_

#include <google/protobuf/arena.h>

#include "rill/awaitable.h"
#include "rill/prepared_message.h"
#include "rill/service.h"
#include "rill/status.h"

namespace rill {

struct WriteOptions {
  // Sends this message uncompressed even when the call compresses.
  bool no_compression = false;
};

namespace internal {

// The untyped stream a streaming handler works with; implemented by the server's call.
class ServerStreamCore {
 public:
  virtual Awaitable<bool> Read(google::protobuf::MessageLite* message) = 0;
  virtual Awaitable<bool> Write(const google::protobuf::MessageLite& message,
                                WriteOptions options) = 0;
  virtual Awaitable<bool> Write(const PreparedMessage& message, WriteOptions options) = 0;
  // Messages a handler needs (requests, responses) live on this arena for the call's duration.
  virtual google::protobuf::Arena* arena() = 0;

 protected:
  ~ServerStreamCore() = default;
};

}  // namespace internal

template <typename R>
class ServerReader {
 public:
  explicit ServerReader(internal::ServerStreamCore* core) : core_(core) {}
  [[nodiscard]] Awaitable<bool> Read(R* message) { return core_->Read(message); }

 protected:
  internal::ServerStreamCore* core_;
};

template <typename W>
class ServerWriter {
 public:
  explicit ServerWriter(internal::ServerStreamCore* core) : core_(core) {}
  [[nodiscard]] Awaitable<bool> Write(const W& message, WriteOptions options = {}) {
    return core_->Write(message, options);
  }
  // A message prepared once (see PreparedMessage): sent without serializing or copying it.
  [[nodiscard]] Awaitable<bool> Write(const PreparedMessage& message, WriteOptions options = {}) {
    return core_->Write(message, options);
  }

 protected:
  internal::ServerStreamCore* core_;
};

template <typename W, typename R>
class ServerReaderWriter {
 public:
  explicit ServerReaderWriter(internal::ServerStreamCore* core) : core_(core) {}
  [[nodiscard]] Awaitable<bool> Read(R* message) { return core_->Read(message); }
  [[nodiscard]] Awaitable<bool> Write(const W& message, WriteOptions options = {}) {
    return core_->Write(message, options);
  }
  // A message prepared once (see PreparedMessage): sent without serializing or copying it.
  [[nodiscard]] Awaitable<bool> Write(const PreparedMessage& message, WriteOptions options = {}) {
    return core_->Write(message, options);
  }

 private:
  internal::ServerStreamCore* core_;
};

namespace detail {

// Client streaming: the handler reads every request and fills one response.
template <typename ServiceT, typename Request, typename Response>
class ClientStreamingMethodHandler final : public TypedMethodHandler<Request, Response> {
 public:
  using Fn = Awaitable<Status> (ServiceT::*)(ServerContext&, ServerReader<Request>&, Response&);
  ClientStreamingMethodHandler(std::string path, ServiceT* service, Fn fn)
      : TypedMethodHandler<Request, Response>(std::move(path), RpcKind::kClientStreaming),
        service_(service),
        fn_(fn) {}

  Awaitable<Status> RunStream(ServerContext& context,
                              internal::ServerStreamCore& core) const override {
    ServerReader<Request> reader(&core);
    Response* response = google::protobuf::Arena::CreateMessage<Response>(core.arena());
    Status status = co_await (service_->*fn_)(context, reader, *response);
    if (status.ok() && !co_await core.Write(*response, WriteOptions{})) {
      co_return Status(StatusCode::kCancelled, "call ended before the response was sent");
    }
    co_return status;
  }

 private:
  ServiceT* service_;
  Fn fn_;
};

// Server streaming: one request, then the handler writes responses.
template <typename ServiceT, typename Request, typename Response>
class ServerStreamingMethodHandler final : public TypedMethodHandler<Request, Response> {
 public:
  using Fn = Awaitable<Status> (ServiceT::*)(ServerContext&, const Request&, ServerWriter<Response>&);
  ServerStreamingMethodHandler(std::string path, ServiceT* service, Fn fn)
      : TypedMethodHandler<Request, Response>(std::move(path), RpcKind::kServerStreaming),
        service_(service),
        fn_(fn) {}

  Awaitable<Status> RunStream(ServerContext& context,
                              internal::ServerStreamCore& core) const override {
    // The call checked the request count (exactly one) before running the handler.
    Request* request = google::protobuf::Arena::CreateMessage<Request>(core.arena());
    if (!co_await core.Read(request)) {
      co_return Status(StatusCode::kCancelled, "call ended before the request arrived");
    }
    ServerWriter<Response> writer(&core);
    co_return co_await (service_->*fn_)(context, *request, writer);
  }

 private:
  ServiceT* service_;
  Fn fn_;
};

template <typename ServiceT, typename Request, typename Response>
class BidiStreamingMethodHandler final : public TypedMethodHandler<Request, Response> {
 public:
  using Fn = Awaitable<Status> (ServiceT::*)(ServerContext&, ServerReaderWriter<Response, Request>&);
  BidiStreamingMethodHandler(std::string path, ServiceT* service, Fn fn)
      : TypedMethodHandler<Request, Response>(std::move(path), RpcKind::kBidiStreaming),
        service_(service),
        fn_(fn) {}

  Awaitable<Status> RunStream(ServerContext& context,
                              internal::ServerStreamCore& core) const override {
    ServerReaderWriter<Response, Request> stream(&core);
    co_return co_await (service_->*fn_)(context, stream);
  }

 private:
  ServiceT* service_;
  Fn fn_;
};

}  // namespace detail
}  // namespace rill

#endif  // RILL_SERVER_STREAM_H_
