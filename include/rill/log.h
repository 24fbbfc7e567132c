// rill's diagnostics: what rill reports that no status carries — an exception a handler or a
// completion threw, a connection closed for misbehaving, a refused handshake.
//
//   rill::SetLogHandler([](rill::LogSeverity severity, std::string_view message) {
//     my_logger.Write(severity == rill::LogSeverity::kError, message);
//   });
//
// By default warnings and errors go to stderr, one line each, and informational messages are
// dropped. The handler is called from whichever thread noticed the event (often a reactor):
// it must be thread-safe and quick, and must not throw.
//
// Thread safety: thread-safe.
#ifndef RILL_LOG_H_
#define RILL_LOG_H_

#include <string_view>

namespace rill {

enum class LogSeverity : unsigned char { kInfo, kWarning, kError };

using LogHandler = void (*)(LogSeverity severity, std::string_view message);

// Installs `handler` for every later message; null restores the default.
void SetLogHandler(LogHandler handler) noexcept;

// Sends one message to the installed handler.
void Log(LogSeverity severity, std::string_view message) noexcept;

}  // namespace rill

#endif  // RILL_LOG_H_
