#include "src/base/user_code.h"

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <typeinfo>

#include "rill/log.h"

namespace rill::internal {
namespace {

std::string TypeName(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name != nullptr ? std::string(name.get()) : std::string(type.name());
}

}  // namespace

std::string DescribeCurrentException() {
  try {
    throw;
  } catch (const std::exception& e) {
    return TypeName(typeid(e)) + ": " + e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

Status StatusForUserException(std::string_view where, std::string_view method) {
  std::string message(where);
  message += " threw while serving ";
  message += method;
  message += ": ";
  message += DescribeCurrentException();
  Log(LogSeverity::kError, message);
  return Status(StatusCode::kUnknown, "unexpected error in RPC handling");
}

void LogUserException(std::string_view where) noexcept {
  try {
    std::string message(where);
    message += " threw: ";
    message += DescribeCurrentException();
    Log(LogSeverity::kError, message);
  } catch (...) {
    Log(LogSeverity::kError, "user code threw, and describing the exception failed");
  }
}

}  // namespace rill::internal

namespace rill::detail {

void CompletionThrew() noexcept { internal::LogUserException("a completion handler"); }

}  // namespace rill::detail
