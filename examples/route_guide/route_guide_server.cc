// A route guide server: routeguide.RouteGuide, one method of each kind (unary, server
// streaming, client streaming, bidirectional streaming) over a few features known in advance.
//
//   route_guide_server --port 50051
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "route_guide.rill.h"
#include "rill/server.h"

#include <CLI/CLI.hpp>

namespace {

using routeguide::Feature;
using routeguide::Point;
using routeguide::Rectangle;
using routeguide::RouteNote;
using routeguide::RouteSummary;

Point MakePoint(int latitude, int longitude) {
  Point point;
  point.set_latitude(latitude);
  point.set_longitude(longitude);
  return point;
}

bool SamePoint(const Point& a, const Point& b) {
  return a.latitude() == b.latitude() && a.longitude() == b.longitude();
}

// Great-circle distance in metres (haversine formula, mean Earth radius).
double DistanceMetres(const Point& from, const Point& to) {
  constexpr double kRadiansPerUnit = 1e-7 * 3.14159265358979323846 / 180;
  constexpr double kEarthRadiusMetres = 6371000;
  const double lat1 = from.latitude() * kRadiansPerUnit;
  const double lat2 = to.latitude() * kRadiansPerUnit;
  const double dlat = lat2 - lat1;
  const double dlon = (to.longitude() - from.longitude()) * kRadiansPerUnit;
  const double a = std::sin(dlat / 2) * std::sin(dlat / 2) +
                   std::cos(lat1) * std::cos(lat2) * std::sin(dlon / 2) * std::sin(dlon / 2);
  return kEarthRadiusMetres * 2 * std::atan2(std::sqrt(a), std::sqrt(1 - a));
}

// Thread-safe: the features never change after construction, and every call keeps its own
// state, so the methods may run concurrently on every reactor.
class RouteGuideService final : public routeguide::RouteGuide::Service {
 public:
  RouteGuideService() {
    const struct {
      const char* name;
      int latitude;
      int longitude;
    } kFeatures[] = {
        {"Old Mill", 473700000, 85400000},     {"Stone Bridge", 473720000, 85430000},
        {"Lookout Tower", 473750000, 85480000}, {"Boathouse", 473650000, 85500000},
        {"Orchard Gate", 473800000, 85350000},
    };
    for (const auto& f : kFeatures) {
      Feature& feature = features_.emplace_back();
      feature.set_name(f.name);
      *feature.mutable_location() = MakePoint(f.latitude, f.longitude);
    }
  }

  // Unary, inline on the reactor: a lookup needs no coroutine.
  rill::Status GetFeature(rill::ServerContext& context, const Point& point,
                          Feature& feature) override {
    *feature.mutable_location() = point;
    if (const Feature* known = Find(point)) feature.set_name(known->name());
    return rill::Status();
  }

  rill::Awaitable<rill::Status> ListFeatures(rill::ServerContext& context,
                                             const Rectangle& rectangle,
                                             rill::ServerWriter<Feature>& writer) override {
    const Point& a = rectangle.lo();
    const Point& b = rectangle.hi();
    const int lat_lo = std::min(a.latitude(), b.latitude());
    const int lat_hi = std::max(a.latitude(), b.latitude());
    const int lon_lo = std::min(a.longitude(), b.longitude());
    const int lon_hi = std::max(a.longitude(), b.longitude());
    for (const Feature& feature : features_) {
      const Point& p = feature.location();
      if (p.latitude() < lat_lo || p.latitude() > lat_hi || p.longitude() < lon_lo ||
          p.longitude() > lon_hi) {
        continue;
      }
      // Suspends while the client is slower than the stream's write quota; false once the
      // call is over (the client cancelled or its deadline passed).
      if (!co_await writer.Write(feature)) {
        co_return rill::Status(rill::StatusCode::kCancelled, "the call ended");
      }
    }
    co_return rill::Status();
  }

  rill::Awaitable<rill::Status> RecordRoute(rill::ServerContext& context,
                                            rill::ServerReader<Point>& reader,
                                            RouteSummary& summary) override {
    Point previous;
    double distance = 0;
    for (Point point; co_await reader.Read(&point);) {
      if (summary.point_count() > 0) distance += DistanceMetres(previous, point);
      summary.set_point_count(summary.point_count() + 1);
      if (Find(point) != nullptr) summary.set_feature_count(summary.feature_count() + 1);
      previous = point;
    }
    summary.set_distance(static_cast<int>(std::lround(distance)));
    co_return rill::Status();
  }

  rill::Awaitable<rill::Status> RouteChat(
      rill::ServerContext& context,
      rill::ServerReaderWriter<RouteNote, RouteNote>& stream) override {
    std::vector<RouteNote> notes;  // this call's notes so far
    for (RouteNote note; co_await stream.Read(&note);) {
      for (const RouteNote& earlier : notes) {
        if (SamePoint(earlier.location(), note.location()) && !co_await stream.Write(earlier)) {
          co_return rill::Status(rill::StatusCode::kCancelled, "the call ended");
        }
      }
      notes.push_back(note);
    }
    co_return rill::Status();
  }

 private:
  const Feature* Find(const Point& point) const {
    for (const Feature& feature : features_) {
      if (SamePoint(feature.location(), point)) return &feature;
    }
    return nullptr;
  }

  std::vector<Feature> features_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("route guide server");
  int port = 50051;
  app.add_option("--port", port, "TCP port to listen on (0 picks a free one)");
  CLI11_PARSE(app, argc, argv);

  // SIGINT and SIGTERM are taken by sigwait() below; blocked before the reactor threads start,
  // they inherit the mask and none of them dies of the signal.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  RouteGuideService service;
  int bound = 0;
  auto server = rill::ServerBuilder()
                    .AddListeningPort("0.0.0.0:" + std::to_string(port), &bound)
                    .RegisterService(&service)
                    .Build();
  if (!server.ok()) {
    std::fprintf(stderr, "cannot start: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("route guide server listening on %d\n", bound);
  std::fflush(stdout);

  // Serve until SIGINT or SIGTERM, then shut down gracefully.
  int signal = 0;
  sigwait(&signals, &signal);
  (*server)->Shutdown();
  return 0;
}
