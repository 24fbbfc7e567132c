// rill::Status: the outcome of an operation or an RPC.
//
// A Status is a gRPC status code, a message, and optional details (a serialized
// `google.rpc.Status`, carried on the wire in `grpc-status-details-bin`). The codes are
// numerically equal to gRPC's, so `static_cast<int>(code)` is what goes on the wire.
//
//   rill::Status Lookup(std::string_view key, std::string* out) {
//     if (key.empty()) return rill::Status(rill::StatusCode::kInvalidArgument, "empty key");
//     ...
//     return rill::Status();  // OK
//   }
//
// An OK status holds no heap memory; copying or moving it costs a pointer. Expected failures
// (bad input, peer reset, deadline) are reported with a Status, never with an exception.
//
// Thread safety: thread-compatible.
#ifndef RILL_STATUS_H_
#define RILL_STATUS_H_

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace rill {

// The canonical gRPC status codes (grpc/doc/statuscodes.md). The values are the wire values.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

inline constexpr int kMaxStatusCode = 16;

// "OK", "CANCELLED", ... as gRPC spells them.
std::string_view StatusCodeName(StatusCode code);

// Maps a wire value to a code; values outside 0..16 become kUnknown, as gRPC specifies.
StatusCode StatusCodeFromInt(int value);

class [[nodiscard]] Status {
 public:
  // OK.
  Status() noexcept = default;
  Status(StatusCode code, std::string_view message);
  // `details` is a serialized google.rpc.Status (opaque to rill).
  Status(StatusCode code, std::string_view message, std::string details);

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  [[nodiscard]] bool ok() const noexcept { return rep_ == nullptr; }
  [[nodiscard]] StatusCode code() const noexcept { return rep_ ? rep_->code : StatusCode::kOk; }
  [[nodiscard]] std::string_view message() const noexcept {
    return rep_ ? std::string_view(rep_->message) : std::string_view();
  }
  [[nodiscard]] std::string_view details() const noexcept {
    return rep_ ? std::string_view(rep_->details) : std::string_view();
  }

  // "INTERNAL: message" (or "OK").
  [[nodiscard]] std::string ToString() const;

  // Explicitly ignores the status, for call sites where failure is expected and harmless.
  void IgnoreError() const noexcept {}

  friend bool operator==(const Status& a, const Status& b) noexcept;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
    std::string details;
  };
  std::unique_ptr<Rep> rep_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);
std::ostream& operator<<(std::ostream& os, StatusCode code);

inline Status OkStatus() noexcept { return Status(); }

}  // namespace rill

#endif  // RILL_STATUS_H_
