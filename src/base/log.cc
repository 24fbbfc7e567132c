#include "rill/log.h"

#include <atomic>
#include <cstdio>

namespace rill {
namespace {

void DefaultHandler(LogSeverity severity, std::string_view message) {
  if (severity == LogSeverity::kInfo) return;
  std::fprintf(stderr, "rill %s: %.*s\n", severity == LogSeverity::kError ? "error" : "warning",
               static_cast<int>(message.size()), message.data());
}

std::atomic<LogHandler> g_handler{&DefaultHandler};

}  // namespace

void SetLogHandler(LogHandler handler) noexcept {
  g_handler.store(handler != nullptr ? handler : &DefaultHandler, std::memory_order_release);
}

void Log(LogSeverity severity, std::string_view message) noexcept {
  g_handler.load(std::memory_order_acquire)(severity, message);
}

}  // namespace rill
