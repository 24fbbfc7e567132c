// The grpc.testing names rill's tests and test programs use, in namespace rill::test, so that
// each file does not repeat them. Header-only: programs that do not link rill_testing (the
// interop client and servers) include it too.
#ifndef RILL_TESTS_TESTING_GRPC_TESTING_NAMES_H_
#define RILL_TESTS_TESTING_GRPC_TESTING_NAMES_H_

#include "grpc/testing/messages.pb.h"
#include "grpc/testing/test.rill.h"

namespace rill::test {

using grpc::testing::Empty;
using grpc::testing::Payload;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using grpc::testing::TestService;

// The server's side of FullDuplexCall and HalfDuplexCall.
using FullDuplexServerStream =
    ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>;

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_GRPC_TESTING_NAMES_H_
