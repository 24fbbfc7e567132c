// Code written against generated classes the way users write it: service implementations that
// override every kind of method, registration with a server builder, and stub calls in their
// blocking, coroutine and callback forms. It is compiled as part of the build and never linked
// or run; it proves that the generated signatures fit the public API.
#include <asio/use_awaitable.hpp>
#include <memory>
#include <string_view>
#include <utility>

#include "atlas/atlas.rill.h"
#include "bare/bare.rill.h"
#include "multi/multi.rill.h"
#include "rill/server.h"
#include "routes/route_guide.rill.h"
#include "shared/geo.rill.h"
#if __has_include("helloworld/helloworld.rill.h")
#include "helloworld/helloworld.rill.h"
#endif

namespace rill_codegen_usage {

namespace routes = ::codegen::routes::v1;
using ::codegen::shared::Point;
using ::codegen::shared::Rectangle;
using RouteGuide = routes::RouteGuide;

// The descriptors are usable at compile time.
static_assert(std::string_view(RouteGuide::kServiceName) == "codegen.routes.v1.RouteGuide");
static_assert(std::string_view(RouteGuide::kGetFeature.path) ==
              "/codegen.routes.v1.RouteGuide/GetFeature");
static_assert(RouteGuide::kGetFeature.kind == rill::RpcKind::kUnary);
static_assert(RouteGuide::kListFeatures.kind == rill::RpcKind::kServerStreaming);
static_assert(RouteGuide::kRecordRoute.kind == rill::RpcKind::kClientStreaming);
static_assert(RouteGuide::kRouteChat.kind == rill::RpcKind::kBidiStreaming);
static_assert(std::string_view(Bare::kEcho.path) == "/Bare/Echo");
static_assert(std::string_view(codegen::multi::Beta::kstream.path) == "/codegen.multi.Beta/stream");

class RouteGuideImpl final : public RouteGuide::Service {
 public:
  rill::Status GetFeature(rill::ServerContext& context, const Point& request,
                          routes::Feature& response) override {
    response.set_name("somewhere");
    *response.mutable_location() = request;
    return rill::Status();
  }

  rill::Awaitable<rill::Status> ListFeatures(rill::ServerContext& context, const Rectangle& request,
                                             rill::ServerWriter<routes::Feature>& writer) override {
    routes::Feature feature;
    *feature.mutable_location() = request.lo();
    if (!co_await writer.Write(feature)) {
      co_return rill::Status(rill::StatusCode::kCancelled, "the call ended");
    }
    co_return rill::Status();
  }

  rill::Awaitable<rill::Status> RecordRoute(rill::ServerContext& context,
                                            rill::ServerReader<Point>& reader,
                                            routes::RouteSummary& response) override {
    Point point;
    while (co_await reader.Read(&point)) response.set_point_count(response.point_count() + 1);
    co_return rill::Status();
  }

  rill::Awaitable<rill::Status> RouteChat(
      rill::ServerContext& context,
      rill::ServerReaderWriter<routes::RouteNote, routes::RouteNote>& stream) override {
    routes::RouteNote note;
    while (co_await stream.Read(&note)) {
      if (!co_await stream.Write(note)) break;
    }
    co_return rill::Status();
  }

  // The coroutine form of a unary method.
  rill::Awaitable<rill::Status> PingAsync(rill::ServerContext& context,
                                          const google::protobuf::Empty& request,
                                          google::protobuf::Empty& response) override {
    co_return rill::Status();
  }
};

// A service in the global namespace, and one with rpc names that shadow generated parameters.
class BareImpl final : public ::Bare::Service {
 public:
  rill::Status Echo(rill::ServerContext& context, const ::BareRequest& request,
                    ::BareReply& response) override {
    response.set_text(request.text());
    return rill::Status();
  }
};

class BetaImpl final : public codegen::multi::Beta::Service {
 public:
  rill::Status context(rill::ServerContext& context, const codegen::multi::Outer& request,
                       codegen::multi::Outer& response) override {
    response = request;
    return rill::Status();
  }
  rill::Awaitable<rill::Status> stream(
      rill::ServerContext& context,
      rill::ServerReaderWriter<codegen::multi::Outer, codegen::multi::Outer>& stream) override {
    co_return rill::Status();
  }
};

void Register(rill::ServerBuilder& builder, RouteGuideImpl& route_guide, BareImpl& bare,
              BetaImpl& beta) {
  builder.RegisterService(&route_guide).RegisterService(&bare).RegisterService(&beta);
}

rill::Status CallBlocking(std::shared_ptr<rill::Channel> channel) {
  RouteGuide::Stub stub(std::move(channel));
  rill::ClientContext context;
  Point point;
  routes::Feature feature;
  rill::Status status = stub.GetFeature(context, point, &feature);
  if (!status.ok()) return status;

  rill::ClientContext list_context;
  auto reader = stub.ListFeatures(list_context, Rectangle());
  while (reader->BlockingRead(&feature)) {
  }
  return reader->BlockingFinish();
}

rill::Awaitable<rill::Status> CallEveryKind(RouteGuide::Stub& stub) {
  rill::ClientContext unary_context;
  Point point;
  routes::Feature feature;
  rill::Status status =
      co_await stub.GetFeature(unary_context, point, &feature, asio::use_awaitable);
  if (!status.ok()) co_return status;

  rill::ClientContext list_context;
  Rectangle area;
  std::unique_ptr<rill::ClientReader<routes::Feature>> reader =
      stub.ListFeatures(list_context, area);
  while (co_await reader->Read(&feature)) {
  }
  status = co_await reader->Finish();
  if (!status.ok()) co_return status;

  rill::ClientContext record_context;
  routes::RouteSummary summary;
  std::unique_ptr<rill::ClientWriter<Point>> writer = stub.RecordRoute(record_context, &summary);
  co_await writer->Write(point);
  status = co_await writer->Finish();
  if (!status.ok()) co_return status;

  rill::ClientContext chat_context;
  std::unique_ptr<rill::ClientReaderWriter<routes::RouteNote, routes::RouteNote>> chat =
      stub.RouteChat(chat_context);
  routes::RouteNote note;
  co_await chat->Write(note);
  co_await chat->WritesDone();
  while (co_await chat->Read(&note)) {
  }
  co_return co_await chat->Finish();
}

void CallWithCallback(RouteGuide::Stub& stub, rill::ClientContext& context, const Point& point,
                      routes::Feature* feature) {
  stub.GetFeature(context, point, feature, [](rill::Status status) { status.IgnoreError(); });
}

rill::Status CallAcrossLibraries(codegen::atlas::Atlas::Stub& stub) {
  rill::ClientContext context;
  Rectangle bounds;
  return stub.Bounds(context, Point(), &bounds);
}

#if __has_include("helloworld/helloworld.rill.h")
class GreeterImpl final : public helloworld::Greeter::Service {
 public:
  rill::Status SayHello(rill::ServerContext& context, const helloworld::HelloRequest& request,
                        helloworld::HelloReply& response) override {
    response.set_message("Hello " + request.name());
    return rill::Status();
  }
};

rill::Awaitable<rill::Status> Greet(helloworld::Greeter::Stub& stub) {
  rill::ClientContext context;
  helloworld::HelloRequest request;
  helloworld::HelloReply reply;
  co_return co_await stub.SayHello(context, request, &reply, asio::use_awaitable);
}
#endif

}  // namespace rill_codegen_usage
