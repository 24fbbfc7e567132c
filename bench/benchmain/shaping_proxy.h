// A simulated network for benchmain's -networkMode/-latency/-kbps/-mtu: an in-process proxy
// between the client and the server that shapes both directions the way grpc-go's
// `benchmark/latency` package shapes a connection, so rill's own transport runs unchanged.
//
//   rill::bench::ShapingProxy::Conditions lan{.latency = 2ms, .kbps = 100 * 1024, .mtu = 1500};
//   auto proxy = rill::bench::ShapingProxy::Start("127.0.0.1:50051", /*unix_listener=*/false, lan);
//   auto channel = rill::Channel::Create((*proxy)->target());
//
// Per direction, every chunk read is at most `mtu` bytes (when mtu > 0) and is written to the
// other side as its own write. A chunk occupies the simulated link for bytes / (kbps · 128 B/s)
// after the previous one left it, and is delivered `latency` after that. Like grpc-go, reading
// pauses while the link is congested by more than `latency`'s worth of data; without a
// bandwidth limit at most 64 MiB are queued per direction.
//
// The proxy runs on a thread of its own (not pinned): it adds CPU load beside the measured
// client and server, so Allocs/op and CPU figures of shaped runs include it.
//
// Thread safety: thread-compatible; its connections live on its own thread.
#ifndef RILL_BENCH_BENCHMAIN_SHAPING_PROXY_H_
#define RILL_BENCH_BENCHMAIN_SHAPING_PROXY_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "rill/status_or.h"

namespace rill::bench {

class ShapingProxy {
 public:
  struct Conditions {
    std::chrono::nanoseconds latency{0};  // One-way delay; <= 0: none.
    std::int64_t kbps = 0;                // Kilobits (1024 bits) per second; <= 0: unlimited.
    std::int64_t mtu = 0;                 // Largest chunk written at once; <= 0: unlimited.

    [[nodiscard]] bool Shapes() const { return latency.count() > 0 || kbps > 0 || mtu > 0; }
  };

  // Listens on 127.0.0.1 (port chosen by the system) or, with `unix_listener`, on a fresh
  // Unix-domain socket path, and forwards every connection to `upstream` ("host:port" or
  // "unix:/path").
  static rill::StatusOr<std::unique_ptr<ShapingProxy>> Start(std::string_view upstream,
                                                             bool unix_listener,
                                                             Conditions conditions);

  // Closes the listener and every connection, and joins the proxy's thread.
  ~ShapingProxy();
  ShapingProxy(const ShapingProxy&) = delete;
  ShapingProxy& operator=(const ShapingProxy&) = delete;

  // The address clients dial: "127.0.0.1:<port>" or "unix:<path>".
  [[nodiscard]] const std::string& target() const;

  struct Impl;

 private:
  explicit ShapingProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill::bench

#endif  // RILL_BENCH_BENCHMAIN_SHAPING_PROXY_H_
