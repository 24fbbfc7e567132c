// An nginx process (Debian's nginx-light, /usr/sbin/nginx, or $RILL_NGINX) that a test starts as
// a gRPC reverse proxy in front of a rill server, and stops again. Each one has a directory of its
// own under the system temp directory (configuration, pid file, logs, temp paths), listens on a
// loopback port of its own, and runs in the foreground as one process (`daemon off; master_process
// off;`), so several can run at once and the test owns each by its PID.
//
//   auto nginx = rill::test::NginxProcess::Start("127.0.0.1:" + std::to_string(backend_port));
//   ASSERT_TRUE(nginx.ok()) << nginx.status();
//   auto channel = rill::Channel::Create((*nginx)->target());
//   ...
//   (*nginx)->Stop();  // or let it go out of scope
//
// Thread safety: thread-compatible.
#ifndef RILL_TESTS_NGINX_NGINX_PROCESS_H_
#define RILL_TESTS_NGINX_NGINX_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rill/status_or.h"

namespace rill::test {

struct NginxOptions {
  // Request headers nginx adds to every call it passes on (grpc_set_header), e.g. a name that
  // tells the backend which of several nginx processes a call came through.
  std::vector<std::pair<std::string, std::string>> request_headers;
};

class NginxProcess {
 public:
  // Where Debian's nginx-light installs nginx.
  static constexpr const char* kDefaultBinary = "/usr/sbin/nginx";

  // The nginx the tests run: $RILL_NGINX when set (another build of nginx), else kDefaultBinary.
  [[nodiscard]] static std::string Binary();
  // Whether Binary() is there and executable.
  [[nodiscard]] static bool Available();

  // Starts nginx on a free loopback port, passing every gRPC call to `backend` ("host:port",
  // plaintext HTTP/2), and returns once it listens. UNAVAILABLE (with nginx's error log) when it
  // could not start; a port another process took between choosing and binding is retried.
  [[nodiscard]] static StatusOr<std::unique_ptr<NginxProcess>> Start(
      std::string_view backend, const NginxOptions& options = {});

  // Stops nginx (Stop()).
  ~NginxProcess();
  NginxProcess(const NginxProcess&) = delete;
  NginxProcess& operator=(const NginxProcess&) = delete;

  // The loopback port nginx listens on, and the channel target that reaches it.
  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] std::string target() const;
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] bool running() const noexcept { return pid_ > 0; }

  // The configuration it runs with, and what it logged so far (for failure messages).
  [[nodiscard]] const std::string& config() const noexcept { return config_; }
  [[nodiscard]] std::string ErrorLog() const;

  // Ends nginx: SIGTERM (its fast shutdown: open connections are closed), SIGKILL if it has not
  // exited after 10 s; waits for it and removes its directory. Idempotent.
  void Stop();

 private:
  NginxProcess() = default;
  // One attempt on `port`; false when nginx exited before it listened (`*bind_failed` says
  // whether the port was taken).
  bool TryStart(int port, std::string_view backend, const NginxOptions& options, bool* bind_failed);
  // SIGKILL, and waits for it.
  void Kill();

  std::string dir_;  // ends with '/': nginx's prefix
  std::string config_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace rill::test

#endif  // RILL_TESTS_NGINX_NGINX_PROCESS_H_
