// The client cases of gRPC's interop test descriptions (grpc/doc/interop-test-descriptions.md)
// as one table, and the parsing of --test_case, shared by the interop clients written here
// (rill's, tests/interop/interop_client.cc, and libgrpc++'s, tests/peers/cpp/interop_client.cc).
//
//   auto cases = SelectInteropCases(InteropCases<MyClient, bool>(), "empty_unary,ping_pong");
//   for (const auto& c : *cases) (client.*c.run)();
//
// A client names each case's member function as below (EmptyUnary, LargeUnary, ...), all with
// the same result type. Header-only and free of rill, so that the libgrpc++ peer (which does
// not link rill) uses it too.
#ifndef RILL_TESTS_INTEROP_INTEROP_CASES_H_
#define RILL_TESTS_INTEROP_INTEROP_CASES_H_

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rill::test::interop {

// A request asking the server to end the call with status 2 (UNKNOWN) and `message`
// (status_code_and_message, special_status_message).
template <class Request>
Request StatusRequest(const std::string& message) {
  Request request;
  request.mutable_response_status()->set_code(2);
  request.mutable_response_status()->set_message(message);
  return request;
}

// One request of a client-streaming call: its payload size, the expect_compressed it carries
// (nullopt: not set), and whether it is sent uncompressed on a compressing call.
struct InputMessage {
  InputMessage(int size, std::optional<bool> expect_compressed = std::nullopt,
               bool no_compression = false)
      : size(size), expect_compressed(expect_compressed), no_compression(no_compression) {}

  int size;
  std::optional<bool> expect_compressed;
  bool no_compression;
};

// One response a server-streaming call asks for: its size and the compression it asks for
// (nullopt: not asked, and not checked).
struct OutputMessage {
  int size;
  std::optional<bool> compressed;
};

template <class Client, class Result>
struct InteropCase {
  const char* name;
  Result (Client::*run)();
};

// Every case, in the order --test_case=all runs them.
template <class Client, class Result>
std::vector<InteropCase<Client, Result>> InteropCases() {
  return {
      {"empty_unary", &Client::EmptyUnary},
      {"large_unary", &Client::LargeUnary},
      {"client_compressed_unary", &Client::ClientCompressedUnary},
      {"server_compressed_unary", &Client::ServerCompressedUnary},
      {"client_streaming", &Client::ClientStreaming},
      {"client_compressed_streaming", &Client::ClientCompressedStreaming},
      {"server_streaming", &Client::ServerStreaming},
      {"server_compressed_streaming", &Client::ServerCompressedStreaming},
      {"ping_pong", &Client::PingPong},
      {"empty_stream", &Client::EmptyStream},
      {"timeout_on_sleeping_server", &Client::TimeoutOnSleepingServer},
      {"cancel_after_begin", &Client::CancelAfterBegin},
      {"cancel_after_first_response", &Client::CancelAfterFirstResponse},
      {"custom_metadata", &Client::CustomMetadata},
      {"status_code_and_message", &Client::StatusCodeAndMessage},
      {"special_status_message", &Client::SpecialStatusMessage},
      {"unimplemented_method", &Client::UnimplementedMethod},
      {"unimplemented_service", &Client::UnimplementedService},
  };
}

// The cases --test_case names: `all`, one case, or a comma-separated list (in its order).
// nullopt, after saying why on stderr, for an unknown name or an empty selection.
template <class Case>
std::optional<std::vector<Case>> SelectInteropCases(const std::vector<Case>& all,
                                                    std::string_view test_case) {
  if (test_case == "all") return all;
  std::vector<Case> selected;
  while (!test_case.empty()) {
    const std::string_view name = test_case.substr(0, test_case.find(','));
    test_case.remove_prefix(std::min(test_case.size(), name.size() + 1));
    auto it = std::find_if(all.begin(), all.end(),
                           [name](const Case& known) { return name == known.name; });
    if (it == all.end()) {
      std::fprintf(stderr, "unknown --test_case: %.*s\n", static_cast<int>(name.size()),
                   name.data());
      return std::nullopt;
    }
    selected.push_back(*it);
  }
  if (selected.empty()) {
    std::fprintf(stderr, "--test_case is empty\n");
    return std::nullopt;
  }
  return selected;
}

}  // namespace rill::test::interop

#endif  // RILL_TESTS_INTEROP_INTEROP_CASES_H_
