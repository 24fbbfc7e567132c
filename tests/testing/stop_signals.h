// For test servers that run until SIGINT or SIGTERM (rill's and the libgrpc++ peers alike):
//
//   rill::test::StopSignals stop;   // first, before any thread starts
//   ... start the server on `port` ...
//   stop.AnnounceAndWait(port);     // prints "listening on <port>", returns on SIGINT/SIGTERM
//   ... shut the server down ...
//
// Header-only and free of rill, so that programs which do not link rill_testing can use it.
#ifndef RILL_TESTS_TESTING_STOP_SIGNALS_H_
#define RILL_TESTS_TESTING_STOP_SIGNALS_H_

#include <pthread.h>

#include <csignal>
#include <cstdio>

namespace rill::test {

// Blocks SIGINT and SIGTERM in the constructing thread, so that they are taken by sigwait in
// AnnounceAndWait rather than ending the process mid-call. Construct it before the server
// starts its threads: they inherit the mask. Thread-compatible.
class StopSignals {
 public:
  StopSignals() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Prints `listening on <port>` on stdout (the line the test scripts wait for) and blocks
  // until SIGINT or SIGTERM arrives.
  void AnnounceAndWait(int port) const {
    std::printf("listening on %d\n", port);
    std::fflush(stdout);
    int signal_number = 0;
    sigwait(&signals_, &signal_number);
  }

 private:
  sigset_t signals_;
};

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_STOP_SIGNALS_H_
