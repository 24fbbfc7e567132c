// The end of a rill test server's main(): serve until SIGINT or SIGTERM, then shut down.
//
//   rill::test::StopSignals stop;  // before the server starts its threads
//   int bound = 0;
//   auto server = rill::ServerBuilder().AddListeningPort("127.0.0.1:0", &bound)...Build();
//   return rill::test::ServeUntilStopped(server, bound, stop);
#ifndef RILL_TESTS_TESTING_SERVE_UNTIL_STOPPED_H_
#define RILL_TESTS_TESTING_SERVE_UNTIL_STOPPED_H_

#include <chrono>
#include <cstdio>
#include <memory>

#include "rill/server.h"
#include "tests/testing/stop_signals.h"

namespace rill::test {

// Returns the process's exit code: 1 (after saying why on stderr) when the server did not
// start; otherwise 0 once a stop signal arrived and the server was shut down (calls still
// running get a second).
inline int ServeUntilStopped(StatusOr<std::unique_ptr<Server>>& server, int bound_port,
                             const StopSignals& stop) {
  if (!server.ok()) {
    std::fprintf(stderr, "cannot start: %s\n", server.status().ToString().c_str());
    return 1;
  }
  stop.AnnounceAndWait(bound_port);
  (*server)->Shutdown(std::chrono::seconds(1));
  return 0;
}

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_SERVE_UNTIL_STOPPED_H_
