// rill::StatusOr<T>: a value or the Status that explains why there is none.
//
//   rill::StatusOr<Config> config = LoadConfig(path);
//   if (!config.ok()) return config.status();
//   Use(*config);
//
// Thread safety: thread-compatible.
#ifndef RILL_STATUS_OR_H_
#define RILL_STATUS_OR_H_

#include <optional>
#include <type_traits>
#include <utility>

#include "rill/detail/check.h"
#include "rill/status.h"

namespace rill {

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // A non-OK status; constructing from an OK status is a bug (checked).
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    RILL_CHECK(!status_.ok());
  }
  template <typename U = T, typename = std::enable_if_t<std::is_constructible_v<T, U&&>>>
  StatusOr(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const noexcept { return value_.has_value(); }
  [[nodiscard]] const Status& status() const noexcept { return status_; }

  T& value() & {
    RILL_CHECK(ok());
    return *value_;
  }
  const T& value() const& {
    RILL_CHECK(ok());
    return *value_;
  }
  T&& value() && {
    RILL_CHECK(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace rill

#endif  // RILL_STATUS_OR_H_
