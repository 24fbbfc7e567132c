#include "rill/status.h"

#include <array>
#include <cstdio>
#include <cstdlib>

#include "rill/detail/check.h"

namespace rill {
namespace {

constexpr std::array<std::string_view, kMaxStatusCode + 1> kCodeNames = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

}  // namespace

std::string_view StatusCodeName(StatusCode code) {
  const int value = static_cast<int>(code);
  if (value < 0 || value > kMaxStatusCode) return "UNKNOWN";
  return kCodeNames[value];
}

StatusCode StatusCodeFromInt(int value) {
  if (value < 0 || value > kMaxStatusCode) return StatusCode::kUnknown;
  return static_cast<StatusCode>(value);
}

Status::Status(StatusCode code, std::string_view message) : Status(code, message, std::string()) {}

Status::Status(StatusCode code, std::string_view message, std::string details) {
  // An OK status carries nothing: message and details of OK are dropped, as gRPC does.
  if (code != StatusCode::kOk) {
    rep_ = std::make_unique<Rep>(Rep{code, std::string(message), std::move(details)});
  }
}

Status::Status(const Status& other)
    : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
  return *this;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code()));
  if (!rep_->message.empty()) {
    out += ": ";
    out += rep_->message;
  }
  return out;
}

bool operator==(const Status& a, const Status& b) noexcept {
  return a.code() == b.code() && a.message() == b.message() && a.details() == b.details();
}

std::ostream& operator<<(std::ostream& os, const Status& status) {
  return os << status.ToString();
}

std::ostream& operator<<(std::ostream& os, StatusCode code) { return os << StatusCodeName(code); }

namespace detail {

void CheckFailed(const char* file, int line, const char* condition, const char* message) noexcept {
  std::fprintf(stderr, "%s:%d: RILL_CHECK failed: %s%s%s\n", file, line, condition,
               message ? ": " : "", message ? message : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace detail
}  // namespace rill
