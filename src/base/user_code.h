// The exception boundary around user code (handlers, interceptors, completions, hooks): rill
// never lets an exception from them unwind through its own state. Call these inside a
// `catch (...)` block.
//
//   try {
//     status = interceptor->OnCallStart(context);
//   } catch (...) {
//     status = internal::StatusForUserException("server interceptor OnCallStart", path);
//   }
#ifndef RILL_SRC_BASE_USER_CODE_H_
#define RILL_SRC_BASE_USER_CODE_H_

#include <string>
#include <string_view>

#include "rill/status.h"

namespace rill::internal {

// What the exception being handled is ("std::runtime_error: <what()>", or a note that it is
// not a std::exception).
std::string DescribeCurrentException();

// Logs that `where` threw while serving `method` and returns the status the call fails with:
// UNKNOWN, without the exception's text (it may hold what the peer should not see).
Status StatusForUserException(std::string_view where, std::string_view method);

// Logs that `where` threw where no call can carry the failure (a completion handler, say).
void LogUserException(std::string_view where) noexcept;

}  // namespace rill::internal

#endif  // RILL_SRC_BASE_USER_CODE_H_
