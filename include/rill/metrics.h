// Per-call metrics as gRPC's OpenTelemetry metrics spec defines them, recorded through a small
// interface, and a built-in registry that serves them in Prometheus' text format over HTTP.
//
//   auto registry = std::make_shared<rill::MetricsRegistry>();
//   builder.AddStatsHandler(rill::MakeMetricsStatsHandler(registry));              // server
//   options.stats_handlers.push_back(rill::MakeMetricsStatsHandler(registry, target));  // channel
//   auto endpoint = rill::MetricsHttpEndpoint::Start(registry, "127.0.0.1:9464");
//   // curl http://127.0.0.1:9464/metrics
//
// Instruments (names as in the spec; labels grpc.method, grpc.status, and grpc.target on the
// client):
//   grpc.server.call.started                            counter    grpc.method
//   grpc.server.call.duration                           histogram  s
//   grpc.server.call.sent_total_compressed_message_size histogram  By
//   grpc.server.call.rcvd_total_compressed_message_size histogram  By
//   grpc.client.attempt.started                         counter    grpc.method, grpc.target
//   grpc.client.attempt.duration                        histogram  s
//   grpc.client.attempt.sent_total_compressed_message_size / rcvd_...  histogram  By
//   grpc.client.call.duration                           histogram  s
// rill makes one attempt per call (no retries), so a call's attempt and call figures agree.
//
// Thread safety: thread-safe (recorders are called from every reactor at once).
#ifndef RILL_METRICS_H_
#define RILL_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "rill/stats.h"
#include "rill/status_or.h"

namespace rill {

enum class MetricInstrument : uint8_t {
  kServerCallStarted,
  kServerCallDuration,
  kServerCallSentTotalCompressedMessageSize,
  kServerCallRcvdTotalCompressedMessageSize,
  kClientAttemptStarted,
  kClientAttemptDuration,
  kClientAttemptSentTotalCompressedMessageSize,
  kClientAttemptRcvdTotalCompressedMessageSize,
  kClientCallDuration,
};
inline constexpr int kMetricInstrumentCount = 9;

// The spec's name ("grpc.server.call.started") and unit ("{call}", "s", "By").
std::string_view MetricInstrumentName(MetricInstrument instrument);
std::string_view MetricInstrumentUnit(MetricInstrument instrument);
bool MetricInstrumentIsCounter(MetricInstrument instrument);

struct MetricLabels {
  std::string_view method;  // grpc.method, without the leading '/'
  std::string_view status;  // grpc.status ("OK", "CANCELLED", ...); empty on *.started
  std::string_view target;  // grpc.target; empty on the server
};

// Where the instruments go: bridge to any metrics system.
class MetricsRecorder {
 public:
  virtual ~MetricsRecorder() = default;
  virtual void AddToCounter(MetricInstrument instrument, const MetricLabels& labels,
                            uint64_t value) = 0;
  virtual void RecordHistogram(MetricInstrument instrument, const MetricLabels& labels,
                               double value) = 0;
};

// A StatsHandler that records the instruments above into `recorder`. `target` labels client
// calls (a channel's target); servers leave it empty.
std::shared_ptr<StatsHandler> MakeMetricsStatsHandler(std::shared_ptr<MetricsRecorder> recorder,
                                                      std::string target = {});

// Keeps every series in memory and renders them in Prometheus' text exposition format
// (names with '.' turned into '_', counters suffixed _total, histograms with the spec's
// bucket boundaries). Recording threads write to 16 stripes, taken in turn, each with its own
// lock, so reactors on different cores do not contend per call; PrometheusText() merges them.
class MetricsRegistry final : public MetricsRecorder {
 public:
  MetricsRegistry();
  ~MetricsRegistry() override;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  void AddToCounter(MetricInstrument instrument, const MetricLabels& labels,
                    uint64_t value) override;
  void RecordHistogram(MetricInstrument instrument, const MetricLabels& labels,
                       double value) override;

  [[nodiscard]] std::string PrometheusText() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// An HTTP server (on a thread of its own) answering GET /metrics with the registry's
// Prometheus text.
class MetricsHttpEndpoint {
 public:
  // `address`: "host:port" (port 0 picks one). UNAVAILABLE when it cannot listen.
  static StatusOr<std::unique_ptr<MetricsHttpEndpoint>> Start(
      std::shared_ptr<MetricsRegistry> registry, std::string_view address);
  // Stops serving and joins the thread.
  ~MetricsHttpEndpoint();
  MetricsHttpEndpoint(const MetricsHttpEndpoint&) = delete;
  MetricsHttpEndpoint& operator=(const MetricsHttpEndpoint&) = delete;

  [[nodiscard]] int port() const noexcept;

  struct Impl;

 private:
  explicit MetricsHttpEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill

#endif  // RILL_METRICS_H_
