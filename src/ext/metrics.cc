#include "rill/metrics.h"

#include <httplib.h>

#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <map>
#include <span>
#include <mutex>
#include <thread>
#include <vector>

#include "rill/status.h"

namespace rill {

namespace {

constexpr int kCount = kMetricInstrumentCount;

struct InstrumentSpec {
  std::string_view name;        // the spec's
  std::string_view unit;
  std::string_view prometheus;  // family name in the exposition
  std::string_view help;
  bool counter;
  bool latency;                 // which buckets
};

constexpr std::array<InstrumentSpec, kCount> kSpecs = {{
    {"grpc.server.call.started", "{call}", "grpc_server_call_started_total",
     "Calls started on the server.", true, false},
    {"grpc.server.call.duration", "s", "grpc_server_call_duration_seconds",
     "End-to-end time of a call on the server.", false, true},
    {"grpc.server.call.sent_total_compressed_message_size", "By",
     "grpc_server_call_sent_total_compressed_message_size_bytes",
     "Compressed message bytes a server call sent.", false, false},
    {"grpc.server.call.rcvd_total_compressed_message_size", "By",
     "grpc_server_call_rcvd_total_compressed_message_size_bytes",
     "Compressed message bytes a server call received.", false, false},
    {"grpc.client.attempt.started", "{attempt}", "grpc_client_attempt_started_total",
     "Call attempts started by the client.", true, false},
    {"grpc.client.attempt.duration", "s", "grpc_client_attempt_duration_seconds",
     "End-to-end time of a call attempt on the client.", false, true},
    {"grpc.client.attempt.sent_total_compressed_message_size", "By",
     "grpc_client_attempt_sent_total_compressed_message_size_bytes",
     "Compressed message bytes a call attempt sent.", false, false},
    {"grpc.client.attempt.rcvd_total_compressed_message_size", "By",
     "grpc_client_attempt_rcvd_total_compressed_message_size_bytes",
     "Compressed message bytes a call attempt received.", false, false},
    {"grpc.client.call.duration", "s", "grpc_client_call_duration_seconds",
     "End-to-end time of a call on the client.", false, true},
}};

// The spec's bucket boundaries.
constexpr double kLatencyBounds[] = {
    0,     0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004,
    0.005, 0.006,   0.008,   0.01,   0.013,  0.016,  0.02,   0.025, 0.03,  0.04,  0.05,
    0.065, 0.08,    0.1,     0.13,   0.16,   0.2,    0.25,   0.3,   0.4,   0.5,   0.65,
    0.8,   1,       2,       5,      10,     20,     50,     100};
constexpr double kSizeBounds[] = {0,        1024,      2048,       4096,       16384,
                                  65536,    262144,    1048576,    4194304,    16777216,
                                  67108864, 268435456, 1073741824, 4294967296.0};

std::span<const double> BoundsOf(const InstrumentSpec& spec) {
  return spec.latency ? std::span<const double>(kLatencyBounds)
                      : std::span<const double>(kSizeBounds);
}

class MetricsStatsHandler final : public StatsHandler {
 public:
  MetricsStatsHandler(std::shared_ptr<MetricsRecorder> recorder, std::string target)
      : recorder_(std::move(recorder)), target_(std::move(target)) {}

  // Only the call's start and end: no message or header event is recorded for it.
  [[nodiscard]] CallEventMask call_events() const override {
    return CallEventBit(CallEventType::kBegin) | CallEventBit(CallEventType::kEnd);
  }

  void HandleCall(void*, const CallEvent& event) override {
    if (event.type != CallEventType::kBegin && event.type != CallEventType::kEnd) return;
    std::string_view method = event.method;
    if (method.starts_with('/')) method.remove_prefix(1);
    MetricLabels labels{.method = method, .status = {},
                        .target = event.client ? std::string_view(target_) : std::string_view()};
    if (event.type == CallEventType::kBegin) {
      recorder_->AddToCounter(event.client ? MetricInstrument::kClientAttemptStarted
                                           : MetricInstrument::kServerCallStarted,
                              labels, 1);
      return;
    }
    labels.status = StatusCodeName(event.status->code());
    const double seconds = std::chrono::duration<double>(event.time - event.begin_time).count();
    const auto sent = static_cast<double>(event.sent_compressed_bytes);
    const auto received = static_cast<double>(event.received_compressed_bytes);
    if (event.client) {
      recorder_->RecordHistogram(MetricInstrument::kClientAttemptDuration, labels, seconds);
      recorder_->RecordHistogram(MetricInstrument::kClientAttemptSentTotalCompressedMessageSize,
                                 labels, sent);
      recorder_->RecordHistogram(MetricInstrument::kClientAttemptRcvdTotalCompressedMessageSize,
                                 labels, received);
      recorder_->RecordHistogram(MetricInstrument::kClientCallDuration, labels, seconds);
    } else {
      recorder_->RecordHistogram(MetricInstrument::kServerCallDuration, labels, seconds);
      recorder_->RecordHistogram(MetricInstrument::kServerCallSentTotalCompressedMessageSize,
                                 labels, sent);
      recorder_->RecordHistogram(MetricInstrument::kServerCallRcvdTotalCompressedMessageSize,
                                 labels, received);
    }
  }

 private:
  std::shared_ptr<MetricsRecorder> recorder_;
  std::string target_;
};

void AppendEscaped(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

void AppendNumber(std::string& out, double value) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, end);
}

}  // namespace

std::string_view MetricInstrumentName(MetricInstrument instrument) {
  return kSpecs[static_cast<size_t>(instrument)].name;
}
std::string_view MetricInstrumentUnit(MetricInstrument instrument) {
  return kSpecs[static_cast<size_t>(instrument)].unit;
}
bool MetricInstrumentIsCounter(MetricInstrument instrument) {
  return kSpecs[static_cast<size_t>(instrument)].counter;
}

std::shared_ptr<StatsHandler> MakeMetricsStatsHandler(std::shared_ptr<MetricsRecorder> recorder,
                                                      std::string target) {
  return std::make_shared<MetricsStatsHandler>(std::move(recorder), std::move(target));
}

// Recording threads (reactors, on every core) write stripes of their own, so that they neither
// wait for one lock nor pass one cache line around per RPC; the exposition merges the stripes.
struct MetricsRegistry::State {
  struct Series {
    std::string method;
    std::string status;
    std::string target;
    uint64_t count = 0;             // counter value, or observations
    double sum = 0;
    std::vector<uint64_t> buckets;  // per bound, not cumulative

    void MergeFrom(const Series& other) {
      count += other.count;
      sum += other.sum;
      for (size_t b = 0; b < buckets.size() && b < other.buckets.size(); ++b) {
        buckets[b] += other.buckets[b];
      }
    }
  };
  // Keyed by "method\0status\0target"; the lookup key is built in a reused buffer.
  using SeriesMap = std::map<std::string, Series, std::less<>>;

  struct alignas(64) Stripe {
    std::mutex mu;
    std::array<SeriesMap, kCount> series;
    Series& Find(MetricInstrument instrument, const MetricLabels& labels);
  };
  static constexpr size_t kStripes = 16;
  std::array<Stripe, kStripes> stripes;

  // The calling thread's stripe: threads take stripes in turn, the first time they record (the
  // same stripe in every registry).
  Stripe& Mine() {
    static std::atomic<size_t> next_thread{0};
    thread_local const size_t index = next_thread.fetch_add(1, std::memory_order_relaxed);
    return stripes[index % kStripes];
  }

  // Every stripe's series of `instrument`, merged.
  SeriesMap Merged(int instrument) {
    SeriesMap merged;
    for (Stripe& stripe : stripes) {
      std::lock_guard lock(stripe.mu);
      for (const auto& [key, series] : stripe.series[static_cast<size_t>(instrument)]) {
        auto [it, inserted] = merged.try_emplace(key, series);
        if (!inserted) it->second.MergeFrom(series);
      }
    }
    return merged;
  }
};

MetricsRegistry::State::Series& MetricsRegistry::State::Stripe::Find(
    MetricInstrument instrument, const MetricLabels& labels) {
  thread_local std::string key;
  key.assign(labels.method);
  key += '\0';
  key += labels.status;
  key += '\0';
  key += labels.target;
  auto& map = series[static_cast<size_t>(instrument)];
  auto it = map.find(std::string_view(key));
  if (it == map.end()) {
    Series s;
    s.method.assign(labels.method);
    s.status.assign(labels.status);
    s.target.assign(labels.target);
    if (!MetricInstrumentIsCounter(instrument)) {
      s.buckets.assign(BoundsOf(kSpecs[static_cast<size_t>(instrument)]).size(), 0);
    }
    it = map.emplace(key, std::move(s)).first;
  }
  return it->second;
}

MetricsRegistry::MetricsRegistry() : state_(std::make_unique<State>()) {}
MetricsRegistry::~MetricsRegistry() = default;

void MetricsRegistry::AddToCounter(MetricInstrument instrument, const MetricLabels& labels,
                                   uint64_t value) {
  State::Stripe& stripe = state_->Mine();
  std::lock_guard lock(stripe.mu);
  stripe.Find(instrument, labels).count += value;
}

void MetricsRegistry::RecordHistogram(MetricInstrument instrument, const MetricLabels& labels,
                                      double value) {
  const auto bounds = BoundsOf(kSpecs[static_cast<size_t>(instrument)]);
  size_t bucket = 0;
  while (bucket < bounds.size() && value > bounds[bucket]) ++bucket;
  State::Stripe& stripe = state_->Mine();
  std::lock_guard lock(stripe.mu);
  State::Series& series = stripe.Find(instrument, labels);
  ++series.count;
  series.sum += value;
  if (bucket < series.buckets.size()) ++series.buckets[bucket];
}

std::string MetricsRegistry::PrometheusText() const {
  std::string out;
  for (int i = 0; i < kCount; ++i) {
    const InstrumentSpec& spec = kSpecs[static_cast<size_t>(i)];
    const State::SeriesMap map = state_->Merged(i);
    if (map.empty()) continue;
    out += "# HELP ";
    out += spec.prometheus;
    out += ' ';
    out += spec.help;
    out += "\n# TYPE ";
    out += spec.prometheus;
    out += spec.counter ? " counter\n" : " histogram\n";
    for (const auto& [key, series] : map) {
      std::string labels = "grpc_method=\"";
      AppendEscaped(labels, series.method);
      labels += '"';
      if (!series.status.empty()) {
        labels += ",grpc_status=\"";
        AppendEscaped(labels, series.status);
        labels += '"';
      }
      if (!series.target.empty()) {
        labels += ",grpc_target=\"";
        AppendEscaped(labels, series.target);
        labels += '"';
      }
      if (spec.counter) {
        out += spec.prometheus;
        out += '{' + labels + "} " + std::to_string(series.count) + '\n';
        continue;
      }
      const auto bounds = BoundsOf(spec);
      uint64_t cumulative = 0;
      for (size_t b = 0; b < bounds.size(); ++b) {
        cumulative += series.buckets[b];
        out += spec.prometheus;
        out += "_bucket{" + labels + ",le=\"";
        AppendNumber(out, bounds[b]);
        out += "\"} " + std::to_string(cumulative) + '\n';
      }
      out += spec.prometheus;
      out += "_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(series.count) + '\n';
      out += spec.prometheus;
      out += "_sum{" + labels + "} ";
      AppendNumber(out, series.sum);
      out += '\n';
      out += spec.prometheus;
      out += "_count{" + labels + "} " + std::to_string(series.count) + '\n';
    }
  }
  return out;
}

struct MetricsHttpEndpoint::Impl {
  std::shared_ptr<MetricsRegistry> registry;
  httplib::Server server;
  std::thread thread;
  int port = 0;
};

StatusOr<std::unique_ptr<MetricsHttpEndpoint>> MetricsHttpEndpoint::Start(
    std::shared_ptr<MetricsRegistry> registry, std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    return Status(StatusCode::kInvalidArgument, "expected host:port, got " + std::string(address));
  }
  std::string host(address.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  int port = 0;
  const std::string_view digits = address.substr(colon + 1);
  if (std::from_chars(digits.data(), digits.data() + digits.size(), port).ec != std::errc()) {
    return Status(StatusCode::kInvalidArgument, "bad port in " + std::string(address));
  }
  auto impl = std::make_unique<Impl>();
  impl->registry = std::move(registry);
  Impl* raw = impl.get();
  impl->server.Get("/metrics", [raw](const httplib::Request&, httplib::Response& response) {
    response.set_content(raw->registry->PrometheusText(), "text/plain; version=0.0.4");
  });
  impl->port = port == 0 ? impl->server.bind_to_any_port(host)
                          : (impl->server.bind_to_port(host, port) ? port : -1);
  if (impl->port <= 0) {
    return Status(StatusCode::kUnavailable, "cannot listen on " + std::string(address));
  }
  impl->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  // stop() before the thread reached its accept loop would be lost: wait for it (briefly).
  for (int i = 0; i < 5000 && !impl->server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::unique_ptr<MetricsHttpEndpoint>(new MetricsHttpEndpoint(std::move(impl)));
}

MetricsHttpEndpoint::MetricsHttpEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsHttpEndpoint::~MetricsHttpEndpoint() {
  impl_->server.stop();
  impl_->thread.join();
}

int MetricsHttpEndpoint::port() const noexcept { return impl_->port; }

}  // namespace rill
