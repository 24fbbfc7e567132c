// What the common test main checks at the end of every test, for tests that want to check it
// earlier.
//
// The test main (test_main.cc) installs one LeakCheckingBufferPool as the default pool for the
// whole process. At the end of each test it fails the test when that pool reports a problem
// (blocks still out, double or foreign releases) or when the number of small blocks out differs
// from the number at the start of the test.
//
//   TEST(Call, FreesRequestBeforeHandlerRuns) {
//     ...
//     rill::test::ExpectNoOutstandingBlocks();   // mid-test: nothing pinned any more
//   }
#ifndef RILL_TESTS_TESTING_LEAK_CHECK_H_
#define RILL_TESTS_TESTING_LEAK_CHECK_H_

#include <cstdint>

#include "rill/mem/leak_checking_pool.h"

namespace rill::test {

// The pool the test main installed as DefaultBufferPool().
LeakCheckingBufferPool& TestBufferPool();

struct OutstandingBlocks {
  int64_t pooled = 0;  // blocks of TestBufferPool() handed out and not released
  int64_t small = 0;   // small blocks taken since the current test started and not released
};
OutstandingBlocks CountOutstandingBlocks();

// Adds a test failure (with `where` in the message) unless both counts are zero.
void ExpectNoOutstandingBlocks(const char* where = "");

// Runs the end-of-test check now: reports (as a test failure) what TestBufferPool() found since
// the last check and resets it, and compares small blocks with the count at the start of the test.
void CheckForLeaksNow();

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_LEAK_CHECK_H_
