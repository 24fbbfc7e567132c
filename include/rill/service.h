// rill::Service: the base of every generated service class, and the method handlers generated
// code registers with it.
//
// Users do not write these by hand; protoc-gen-rill generates, for `service Greeter`:
//
//   class Greeter::Service : public rill::Service {
//    public:
//     // Override the plain form to run inline on the reactor (no coroutine, no allocation) ...
//     virtual rill::Status SayHello(rill::ServerContext&, const HelloRequest&, HelloReply&);
//     // ... or the coroutine form when the handler needs to wait for something.
//     virtual rill::Awaitable<rill::Status> SayHelloAsync(rill::ServerContext&,
//                                                         const HelloRequest&, HelloReply&);
//   };
//
// Streaming methods have only a coroutine form, taking a reader and/or writer
// (rill/server_stream.h).
//
// Handlers run on the call's reactor thread, after the HTTP/2 session finished processing the
// bytes that completed the request (never inside its callbacks), and must not block. An
// exception a handler throws (the plain form, or out of the coroutine) fails that call with
// UNKNOWN; the exception is logged (rill/log.h), not sent to the client, and the connection
// and the process live on.
//
// Thread safety: a service's methods are called concurrently from every reactor; a service must
// be thread-safe (typically stateless, or guarding its own state).
#ifndef RILL_SERVICE_H_
#define RILL_SERVICE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/arena.h>

#include "rill/awaitable.h"
#include "rill/payload_field.h"
#include "rill/server_context.h"
#include "rill/status.h"

namespace google::protobuf {
class MessageLite;
class ServiceDescriptor;
}  // namespace google::protobuf

namespace rill {

enum class RpcKind : unsigned char {
  kUnary,
  kClientStreaming,
  kServerStreaming,
  kBidiStreaming,
};

namespace internal {
class ServerStreamCore;
}  // namespace internal

namespace detail {

using google::protobuf::Arena;
using google::protobuf::MessageLite;

// One method of a service: how to make its messages and how to run its handler. Generated code
// instantiates the typed subclasses below.
class MethodHandler {
 public:
  MethodHandler(std::string path, RpcKind kind) : path_(std::move(path)), kind_(kind) {}
  virtual ~MethodHandler() = default;
  MethodHandler(const MethodHandler&) = delete;
  MethodHandler& operator=(const MethodHandler&) = delete;

  // "/package.Service/Method".
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] RpcKind kind() const noexcept { return kind_; }
  // The fields its messages carry outside protobuf (Service::CarryPayload); empty: none.
  [[nodiscard]] const PayloadField& request_payload() const noexcept { return request_payload_; }
  [[nodiscard]] const PayloadField& response_payload() const noexcept {
    return response_payload_;
  }
  void set_payload_fields(const PayloadField& request, const PayloadField& response) noexcept {
    request_payload_ = request;
    response_payload_ = response;
  }

  // A request / response message owned by `arena`.
  virtual MessageLite* NewRequest(Arena* arena) const = 0;
  virtual MessageLite* NewResponse(Arena* arena) const = 0;

  // Unary: the plain form. When it returns with context.run_async_ set, the coroutine form runs.
  virtual Status RunUnary(ServerContext& context, const MessageLite& request,
                          MessageLite& response) const;
  virtual Awaitable<Status> RunUnaryAsync(ServerContext& context, const MessageLite& request,
                                          MessageLite& response) const;
  // Streaming kinds: the coroutine handler, given the call's stream.
  virtual Awaitable<Status> RunStream(ServerContext& context,
                                      internal::ServerStreamCore& stream) const;

 private:
  std::string path_;
  RpcKind kind_;
  PayloadField request_payload_;
  PayloadField response_payload_;
};

// Shared by the typed handlers: the message factories.
template <typename Request, typename Response>
class TypedMethodHandler : public MethodHandler {
 public:
  using MethodHandler::MethodHandler;
  MessageLite* NewRequest(Arena* arena) const override {
    return Arena::CreateMessage<Request>(arena);
  }
  MessageLite* NewResponse(Arena* arena) const override {
    return Arena::CreateMessage<Response>(arena);
  }
};

template <typename ServiceT, typename Request, typename Response>
class UnaryMethodHandler final : public TypedMethodHandler<Request, Response> {
 public:
  using Sync = Status (ServiceT::*)(ServerContext&, const Request&, Response&);
  using Async = Awaitable<Status> (ServiceT::*)(ServerContext&, const Request&, Response&);

  UnaryMethodHandler(std::string path, ServiceT* service, Sync sync, Async async)
      : TypedMethodHandler<Request, Response>(std::move(path), RpcKind::kUnary),
        service_(service),
        sync_(sync),
        async_(async) {}

  Status RunUnary(ServerContext& context, const MessageLite& request,
                  MessageLite& response) const override {
    return (service_->*sync_)(context, static_cast<const Request&>(request),
                              static_cast<Response&>(response));
  }
  Awaitable<Status> RunUnaryAsync(ServerContext& context, const MessageLite& request,
                                  MessageLite& response) const override {
    return (service_->*async_)(context, static_cast<const Request&>(request),
                               static_cast<Response&>(response));
  }

 private:
  ServiceT* service_;
  Sync sync_;
  Async async_;
};

}  // namespace detail

class Service {
 public:
  virtual ~Service() = default;
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // "package.Service".
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::vector<std::unique_ptr<detail::MethodHandler>>& methods() const {
    return methods_;
  }
  // The service's protobuf descriptor, which server reflection serves (with its file and the
  // files that file imports). Null when the code was generated for the lite runtime, which has
  // no descriptors.
  [[nodiscard]] const google::protobuf::ServiceDescriptor* descriptor() const {
    return descriptor_ != nullptr ? descriptor_() : nullptr;
  }

  // Carries `request`'s and `response`'s bytes outside protobuf for `method` (its name in the
  // .proto, e.g. "UnaryCall"): handlers find the request's in ServerContext::request_payload()
  // and give the response's with ServerContext::SetResponsePayload() (rill/payload_field.h).
  // Either may be empty. Call it before the server is built, typically in the constructor of the
  // class that implements the generated service. Throws std::invalid_argument when the service
  // has no such method.
  //
  //   EchoService() {
  //     constexpr rill::PayloadField kBody{Chunk::kDataFieldNumber};
  //     CarryPayload("Echo", kBody, kBody);
  //   }
  void CarryPayload(std::string_view method, const PayloadField& request,
                    const PayloadField& response);

 protected:
  // Finds the service's descriptor; called only when asked for, so that building a service
  // never builds descriptors nobody uses.
  using DescriptorGetter = const google::protobuf::ServiceDescriptor* (*)();

  explicit Service(std::string name, DescriptorGetter descriptor_getter = nullptr)
      : name_(std::move(name)), descriptor_(descriptor_getter) {}
  void AddMethod(std::unique_ptr<detail::MethodHandler> method) {
    methods_.push_back(std::move(method));
  }

 private:
  std::string name_;
  DescriptorGetter descriptor_;
  std::vector<std::unique_ptr<detail::MethodHandler>> methods_;
};

}  // namespace rill

#endif  // RILL_SERVICE_H_
