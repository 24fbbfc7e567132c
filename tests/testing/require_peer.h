// What a test does when a peer or tool it talks to (the zstd CLI, node and grpc-js, ...) is not
// on this machine.
//
// With RILL_REQUIRE_PEERS set to anything but "" or "0" in the environment (CI sets it, see
// .ci/run) the test FAILS: a test that passes because its peer is missing checks nothing. Without
// it the test is skipped, and says how to make that a failure.
//
//   TEST(Interop, ZstdReadsRillOutput) {
//     RILL_REQUIRE_PEER(HaveProgram("zstd"), "the zstd command (Debian's zstd)");
//     ...
//   }
#ifndef RILL_TESTS_TESTING_REQUIRE_PEER_H_
#define RILL_TESTS_TESTING_REQUIRE_PEER_H_

#include <gtest/gtest.h>

namespace rill::test {

// Whether RILL_REQUIRE_PEERS asks for missing peers to fail tests.
bool PeersRequired();

// Whether `program` is found on PATH.
bool HaveProgram(const char* program);

}  // namespace rill::test

// Fails (RILL_REQUIRE_PEERS) or skips the current test, from its body, unless `present`.
#define RILL_REQUIRE_PEER(present, what)                                                  \
  do {                                                                                    \
    if (!(present)) {                                                                     \
      if (::rill::test::PeersRequired()) {                                                \
        FAIL() << (what) << " is missing, and RILL_REQUIRE_PEERS is set";                 \
      } else {                                                                            \
        GTEST_SKIP() << (what) << " is missing (with RILL_REQUIRE_PEERS=1 this fails)";   \
      }                                                                                   \
    }                                                                                     \
  } while (false)

#endif  // RILL_TESTS_TESTING_REQUIRE_PEER_H_
