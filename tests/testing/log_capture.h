// LogCapture: collects what rill logs (rill/log.h) while it lives, for tests that assert a line
// was written. One at a time: it installs the process-wide log handler and removes it again.
#ifndef RILL_TESTS_TESTING_LOG_CAPTURE_H_
#define RILL_TESTS_TESTING_LOG_CAPTURE_H_

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rill/log.h"

namespace rill::test {

class LogCapture {
 public:
  LogCapture() {
    std::lock_guard lock(mu());
    lines().clear();
    SetLogHandler(&Record);
  }
  ~LogCapture() { SetLogHandler(nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  static std::vector<std::string> Lines() {
    std::lock_guard lock(mu());
    return lines();
  }
  // Whether some line contains `text`.
  static bool Contains(std::string_view text) {
    std::lock_guard lock(mu());
    for (const std::string& line : lines()) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

 private:
  static void Record(LogSeverity, std::string_view message) {
    std::lock_guard lock(mu());
    lines().emplace_back(message);
  }
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::vector<std::string>& lines() {
    static std::vector<std::string> l;
    return l;
  }
};

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_LOG_CAPTURE_H_
