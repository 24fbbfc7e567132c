#include "tests/interop/unary_checks_service.h"

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <utility>

namespace rill::test::interop {
namespace {

using interop_checks::CheckRequest;
using interop_checks::CheckResponse;
using interop_checks::ObserveRequest;
using interop_checks::ObserveResponse;

using Clock = std::chrono::steady_clock;

constexpr std::string_view kEchoPrefix = "x-check-";

// Everything Check does besides sleeping: echo the metadata, fill the response, pick the status.
rill::Status Answer(ServerContext& context, const CheckRequest& request, CheckResponse& response) {
  if (request.echo_metadata()) {
    for (const auto& [key, value] : context.client_metadata()) {
      if (key.starts_with(kEchoPrefix)) {
        context.AddInitialMetadata(key, value);
        context.AddTrailingMetadata(key, value);
      }
    }
  }
  if (request.response_payload_size() < 0) {
    return rill::Status(StatusCode::kInvalidArgument, "negative response_payload_size");
  }
  if (!request.payload().empty()) {
    response.set_request_payload_size(static_cast<int64_t>(request.payload().size()));
    response.set_request_payload_hash(PayloadHash(request.payload()));
  }
  if (request.response_payload_size() > 0) {
    response.set_payload(PatternPayload(static_cast<size_t>(request.response_payload_size())));
  }
  if (request.status_code() != 0) {
    return rill::Status(StatusCodeFromInt(request.status_code()), request.status_message(),
                        request.status_details());
  }
  return rill::Status();
}

}  // namespace

uint64_t PayloadHash(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ULL;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

std::string PatternPayload(size_t size) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>(i % 251);
  return out;
}

void ObservationLog::Started(const std::string& call_id) { Put(call_id, CheckObservation{}); }

void ObservationLog::Finished(const std::string& call_id, const CheckObservation& observation) {
  CheckObservation finished = observation;
  finished.finished = true;
  Put(call_id, finished);
}

void ObservationLog::Put(const std::string& call_id, const CheckObservation& observation) {
  {
    std::lock_guard lock(mu_);
    auto [it, inserted] = entries_.insert_or_assign(call_id, observation);
    if (inserted) {
      order_.emplace(next_++, call_id);
      while (entries_.size() > kMaxEntries) {
        entries_.erase(order_.begin()->second);
        order_.erase(order_.begin());
      }
    }
  }
  changed_.notify_all();
}

std::optional<CheckObservation> ObservationLog::Find(const std::string& call_id,
                                                     ObserveRequest::Event event) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(call_id);
  if (it == entries_.end()) return std::nullopt;
  if (event == ObserveRequest::FINISHED && !it->second.finished) return std::nullopt;
  return it->second;
}

std::optional<CheckObservation> ObservationLog::WaitFor(const std::string& call_id,
                                                        ObserveRequest::Event event,
                                                        std::chrono::milliseconds timeout) const {
  const auto until = Clock::now() + timeout;
  std::unique_lock lock(mu_);
  for (;;) {
    auto it = entries_.find(call_id);
    if (it != entries_.end() && (event == ObserveRequest::STARTED || it->second.finished)) {
      return it->second;
    }
    if (changed_.wait_until(lock, until) == std::cv_status::timeout) return std::nullopt;
  }
}

rill::Status UnaryChecksService::Check(ServerContext& context, const CheckRequest& request,
                                       CheckResponse& response) {
  if (request.sleep_ms() > 0) return rill::detail::RunAsyncHandler(context);
  return Answer(context, request, response);
}

Awaitable<rill::Status> UnaryChecksService::CheckAsync(ServerContext& context,
                                                       const CheckRequest& request,
                                                       CheckResponse& response) {
  const std::string& call_id = request.call_id();
  if (!call_id.empty()) log_.Started(call_id);
  // The call's cancellation (client cancel, deadline, shutdown) aborts this wait.
  asio::steady_timer timer(context.io_context(), std::chrono::milliseconds(request.sleep_ms()));
  asio::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));

  CheckObservation seen;
  seen.cancelled = ec == asio::error::operation_aborted || context.IsCancelled();
  seen.had_deadline = context.deadline() != ServerContext::Clock::time_point::max();
  if (seen.had_deadline) {
    seen.after_deadline = std::chrono::duration_cast<std::chrono::microseconds>(
        ServerContext::Clock::now() - context.deadline());
  }
  if (!call_id.empty()) log_.Finished(call_id, seen);
  if (seen.cancelled) {
    co_return rill::Status(StatusCode::kCancelled, "cancelled while sleeping");
  }
  co_return Answer(context, request, response);
}

Awaitable<rill::Status> UnaryChecksService::ObserveAsync(ServerContext& context,
                                                         const ObserveRequest& request,
                                                         ObserveResponse& response) {
  const auto until = Clock::now() + std::chrono::milliseconds(request.wait_ms());
  asio::steady_timer timer(context.io_context());
  for (;;) {
    if (auto seen = log_.Find(request.call_id(), request.event())) {
      response.set_found(true);
      response.set_cancelled(seen->cancelled);
      response.set_had_deadline(seen->had_deadline);
      response.set_observed_after_deadline_us(seen->after_deadline.count());
      co_return rill::Status();
    }
    if (Clock::now() >= until) co_return rill::Status();  // found = false
    timer.expires_after(std::chrono::milliseconds(2));
    asio::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return rill::Status(StatusCode::kCancelled, "Observe was cancelled");
  }
}

}  // namespace rill::test::interop
