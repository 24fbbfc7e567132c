// interop_checks.UnaryChecks on rill: the test-only service behind the unary interop checks
// (grpcpp_unary_interop_test in process, grpcio_unary_checks.py through rill_interop_server).
//
//   rill::test::interop::UnaryChecksService checks;
//   builder.RegisterService(&checks);
//   ...  // a client calls Check{sleep_ms: 5000, call_id: "c1"} with a 100 ms deadline
//   auto seen = checks.log().WaitFor("c1", interop_checks::ObserveRequest::FINISHED,
//                                    std::chrono::seconds(10));
//   EXPECT_TRUE(seen && seen->cancelled);
//
// Check answers inline on the reactor unless it has to sleep; then it runs as a coroutine that
// waits on an asio::steady_timer, which the call's cancellation aborts. Observe lets an
// out-of-process client ask what a Check handler observed (see unary_checks.proto).
//
// Thread safety: thread-safe (handlers run on every reactor; the log has its own lock).
#ifndef RILL_TESTS_INTEROP_UNARY_CHECKS_SERVICE_H_
#define RILL_TESTS_INTEROP_UNARY_CHECKS_SERVICE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "interop_checks/unary_checks.rill.h"

namespace rill::test::interop {

// FNV-1a 64-bit: CheckResponse.request_payload_hash.
uint64_t PayloadHash(std::string_view bytes);
// `size` bytes of the pattern CheckResponse.payload carries (byte i is i % 251).
std::string PatternPayload(size_t size);

// What the handler of a Check with a call_id observed.
struct CheckObservation {
  bool finished = false;   // the sleep ended (else: only started)
  bool cancelled = false;  // ... because the call was cancelled
  bool had_deadline = false;
  // When the handler saw the cancellation, relative to the call's deadline.
  std::chrono::microseconds after_deadline{0};
};

// Observations by call_id. Thread-safe. Holds at most kMaxEntries; the oldest go first.
class ObservationLog {
 public:
  static constexpr size_t kMaxEntries = 1024;

  void Started(const std::string& call_id);
  void Finished(const std::string& call_id, const CheckObservation& observation);

  // The observation once `event` happened for `call_id`; nullopt if it has not (yet).
  std::optional<CheckObservation> Find(const std::string& call_id,
                                       interop_checks::ObserveRequest::Event event) const;
  // Blocks up to `timeout` for `event`. Not for reactor threads.
  std::optional<CheckObservation> WaitFor(const std::string& call_id,
                                          interop_checks::ObserveRequest::Event event,
                                          std::chrono::milliseconds timeout) const;

 private:
  void Put(const std::string& call_id, const CheckObservation& observation);

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::map<std::string, CheckObservation> entries_;
  std::map<uint64_t, std::string> order_;  // insertion number -> call_id, for eviction
  uint64_t next_ = 0;
};

class UnaryChecksService final : public interop_checks::UnaryChecks::Service {
 public:
  // Inline, unless the request asks for a sleep (then CheckAsync runs).
  rill::Status Check(ServerContext& context, const interop_checks::CheckRequest& request,
                     interop_checks::CheckResponse& response) override;
  Awaitable<rill::Status> CheckAsync(ServerContext& context,
                                     const interop_checks::CheckRequest& request,
                                     interop_checks::CheckResponse& response) override;
  // Polls the log on a timer (never blocks the reactor).
  Awaitable<rill::Status> ObserveAsync(ServerContext& context,
                                       const interop_checks::ObserveRequest& request,
                                       interop_checks::ObserveResponse& response) override;

  [[nodiscard]] ObservationLog& log() noexcept { return log_; }

 private:
  ObservationLog log_;
};

}  // namespace rill::test::interop

#endif  // RILL_TESTS_INTEROP_UNARY_CHECKS_SERVICE_H_
