// A route guide client: one call of each kind to routeguide.RouteGuide, printing what the server
// answered. Written as coroutines, co_await-ing the stub and the streams; each call also has a
// blocking form (stub.GetFeature(context, point, &feature), stream->BlockingRead(&feature), ...).
//
//   route_guide_client --target localhost:50051
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "route_guide.rill.h"
#include "rill/channel.h"

#include <CLI/CLI.hpp>
#include <asio/co_spawn.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>

namespace {

using routeguide::Feature;
using routeguide::Point;
using routeguide::Rectangle;
using routeguide::RouteGuide;
using routeguide::RouteNote;
using routeguide::RouteSummary;
using ChatStream = rill::ClientReaderWriter<RouteNote, RouteNote>;

constexpr std::chrono::seconds kTimeout(10);

Point MakePoint(int latitude, int longitude) {
  Point point;
  point.set_latitude(latitude);
  point.set_longitude(longitude);
  return point;
}

RouteNote MakeNote(const Point& point, const char* message) {
  RouteNote note;
  *note.mutable_location() = point;
  note.set_message(message);
  return note;
}

std::string Format(const Point& point) {
  char text[64];
  std::snprintf(text, sizeof(text), "(%.4f, %.4f)", point.latitude() / 1e7,
                point.longitude() / 1e7);
  return text;
}

rill::Awaitable<rill::Status> GetFeature(RouteGuide::Stub stub, Point point) {
  rill::ClientContext context;
  context.set_timeout(kTimeout);
  Feature feature;
  rill::Status status = co_await stub.GetFeature(context, point, &feature, asio::use_awaitable);
  if (status.ok()) {
    std::printf("GetFeature %s: %s\n", Format(point).c_str(),
                feature.name().empty() ? "nothing known" : feature.name().c_str());
  }
  co_return status;
}

rill::Awaitable<rill::Status> ListFeatures(RouteGuide::Stub stub, Rectangle rectangle) {
  rill::ClientContext context;
  context.set_timeout(kTimeout);
  std::printf("ListFeatures %s to %s:\n", Format(rectangle.lo()).c_str(),
              Format(rectangle.hi()).c_str());
  auto reader = stub.ListFeatures(context, rectangle);
  for (Feature feature; co_await reader->Read(&feature);) {
    std::printf("  %s at %s\n", feature.name().c_str(), Format(feature.location()).c_str());
  }
  co_return co_await reader->Finish();
}

rill::Awaitable<rill::Status> RecordRoute(RouteGuide::Stub stub, std::vector<Point> route) {
  rill::ClientContext context;
  context.set_timeout(kTimeout);
  RouteSummary summary;
  auto writer = stub.RecordRoute(context, &summary);
  for (const Point& point : route) {
    if (!co_await writer->Write(point)) break;  // the call is over; Finish() says why
  }
  rill::Status status = co_await writer->Finish();
  if (status.ok()) {
    std::printf("RecordRoute: %d points, %d with a feature, %d m\n", summary.point_count(),
                summary.feature_count(), summary.distance());
  }
  co_return status;
}

rill::Awaitable<void> SendNotes(ChatStream* stream, std::vector<RouteNote> notes) {
  for (const RouteNote& note : notes) {
    if (!co_await stream->Write(note)) co_return;
  }
  co_await stream->WritesDone();
}

rill::Awaitable<void> ReceiveNotes(ChatStream* stream) {
  for (RouteNote note; co_await stream->Read(&note);) {
    std::printf("RouteChat: \"%s\" at %s\n", note.message().c_str(),
                Format(note.location()).c_str());
  }
}

rill::Awaitable<rill::Status> RouteChat(RouteGuide::Stub stub, std::vector<RouteNote> notes) {
  using asio::experimental::awaitable_operators::operator&&;
  rill::ClientContext context;
  context.set_timeout(kTimeout);
  std::unique_ptr<ChatStream> stream = stub.RouteChat(context);
  // Sending and receiving run at once: which notes come back, and when, is the server's choice.
  co_await (SendNotes(stream.get(), std::move(notes)) && ReceiveNotes(stream.get()));
  co_return co_await stream->Finish();
}

// The walk the client reports on. (Built outside the coroutines: GCC 12 cannot keep the array
// behind an initializer list in a coroutine frame.)
Point Mill() { return MakePoint(473700000, 85400000); }
Point Bridge() { return MakePoint(473720000, 85430000); }

Rectangle Area() {
  Rectangle rectangle;
  *rectangle.mutable_lo() = MakePoint(473690000, 85390000);
  *rectangle.mutable_hi() = MakePoint(473760000, 85490000);
  return rectangle;
}

std::vector<Point> Route() {
  return {Mill(), Bridge(), MakePoint(473730000, 85450000), MakePoint(473750000, 85480000)};
}

std::vector<RouteNote> Notes() {
  return {MakeNote(Mill(), "first at the mill"), MakeNote(Bridge(), "first at the bridge"),
          MakeNote(Mill(), "second at the mill"), MakeNote(Mill(), "third at the mill"),
          MakeNote(Bridge(), "second at the bridge")};
}

rill::Awaitable<rill::Status> Tour(RouteGuide::Stub stub) {
  rill::Status status = co_await GetFeature(stub, Mill());
  if (status.ok()) status = co_await GetFeature(stub, MakePoint(473710000, 85410000));
  if (status.ok()) status = co_await ListFeatures(stub, Area());
  if (status.ok()) status = co_await RecordRoute(stub, Route());
  if (status.ok()) status = co_await RouteChat(stub, Notes());
  co_return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("route guide client");
  std::string target = "localhost:50051";
  app.add_option("--target", target, "server address (host:port or unix:/path)");
  CLI11_PARSE(app, argc, argv);

  auto channel = rill::Channel::Create(target);
  if (!channel.ok()) {
    std::fprintf(stderr, "%s\n", channel.status().ToString().c_str());
    return 2;
  }

  // The coroutines run on this thread's io_context; rill completes each operation there.
  asio::io_context io;
  rill::Status result;
  asio::co_spawn(io, Tour(RouteGuide::Stub(*channel)),
                 [&result](std::exception_ptr error, rill::Status status) {
                   if (error) std::rethrow_exception(error);
                   result = std::move(status);
                 });
  io.run();
  if (!result.ok()) {
    std::fprintf(stderr, "route guide: %s\n", result.ToString().c_str());
    return 1;
  }
  return 0;
}
