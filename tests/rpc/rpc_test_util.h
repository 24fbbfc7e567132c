// The server + channel fixture and message helpers moved to tests/testing (the rill_testing
// library); this header remains for the tests that still include it by this name.
#ifndef RILL_TESTS_RPC_RPC_TEST_UTIL_H_
#define RILL_TESTS_RPC_RPC_TEST_UTIL_H_

#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

#endif  // RILL_TESTS_RPC_RPC_TEST_UTIL_H_
