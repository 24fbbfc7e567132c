// rill::BinaryLogFilter's syntax and precedence, and the log's bounded queue: a full queue drops
// entries and counts them while calls go on.
#include "rill/binary_log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

constexpr uint32_t kMax = BinaryLogFilter::kUnlimited;

BinaryLogFilter::Limits LimitsFor(std::string_view filter, std::string_view method) {
  auto parsed = BinaryLogFilter::Parse(filter);
  EXPECT_TRUE(parsed.ok()) << filter << ": " << parsed.status();
  return parsed.ok() ? parsed->For(method) : BinaryLogFilter::Limits();
}

TEST(BinaryLogFilter, Syntax) {
  auto all = LimitsFor("*", "/a.S/M");
  EXPECT_TRUE(all.log);
  EXPECT_EQ(all.header_bytes, kMax);
  EXPECT_EQ(all.message_bytes, kMax);
  auto h = LimitsFor("*{h}", "/a.S/M");
  EXPECT_EQ(h.header_bytes, kMax);
  EXPECT_EQ(h.message_bytes, 0u);
  auto m = LimitsFor("*{m:256}", "/a.S/M");
  EXPECT_EQ(m.header_bytes, 0u);
  EXPECT_EQ(m.message_bytes, 256u);
  auto both = LimitsFor("a.S/M{h:10;m:20}", "a.S/M");
  EXPECT_TRUE(both.log);
  EXPECT_EQ(both.header_bytes, 10u);
  EXPECT_EQ(both.message_bytes, 20u);
  EXPECT_FALSE(LimitsFor("", "/a.S/M").log);
  for (const char* bad : {"*,*", "-a.S/*", "-a.S/M{h}", "a.S", "/M", "a.S/M*", "a.S/M{x}",
                          "a.S/M{h:}", "a.S/M{m;h}", "a.S/M,a.S/M", "a.S/*,a.S/*", "a.S/M,-a.S/M",
                          ",", "*{h:1;m:2"}) {
    EXPECT_FALSE(BinaryLogFilter::Parse(bad).ok()) << bad;
  }
}

TEST(BinaryLogFilter, MethodBeatsServiceBeatsStar) {
  const char* filter = "*{h:1},a.S/*{h:2},a.S/M{h:3},-a.S/X";
  EXPECT_EQ(LimitsFor(filter, "/a.S/M").header_bytes, 3u);
  EXPECT_EQ(LimitsFor(filter, "/a.S/N").header_bytes, 2u);
  EXPECT_EQ(LimitsFor(filter, "/b.T/M").header_bytes, 1u);
  EXPECT_FALSE(LimitsFor(filter, "/a.S/X").log);
  EXPECT_FALSE(LimitsFor("a.S/M", "/a.S/N").log);
}

class Echo final : public grpc::testing::TestService::Service {
 public:
  Status UnaryCall(ServerContext&, const grpc::testing::SimpleRequest&,
                   grpc::testing::SimpleResponse&) override {
    return Status();
  }
};

TEST(BinaryLog, FullQueueDropsAndCountsWhileCallsGoOn) {
  const std::string path = ::testing::TempDir() + "/rill_binary_log_test.binlog";
  // One entry of room: a call logs six on each side, so most are dropped.
  auto log = BinaryLog::Create(path, {.filter = "*", .queue_capacity = 1});
  ASSERT_TRUE(log.ok()) << log.status();
  Echo service;
  TestServerSetup setup;
  setup.services.push_back(&service);
  setup.stats_handlers.push_back(*log);
  auto server = TestServer::Start(Transport::kTcp, setup);
  ASSERT_NE(server, nullptr);
  ChannelOptions options;
  options.stats_handlers.push_back(*log);
  auto channel = server->NewChannel(options);
  grpc::testing::TestService::Stub stub(channel);
  constexpr int kCalls = 200;
  for (int i = 0; i < kCalls; ++i) {
    ClientContext context;
    grpc::testing::SimpleRequest request;
    request.mutable_payload()->mutable_body()->assign(100, 'x');
    grpc::testing::SimpleResponse response;
    ASSERT_TRUE(stub.UnaryCall(context, request, &response).ok());
  }
  channel.reset();
  server.reset();
  (*log)->Flush();
  EXPECT_GT((*log)->dropped(), 0u);
  EXPECT_EQ((*log)->written() + (*log)->dropped(), 2u * 6 * kCalls);
  log->reset();
  std::remove(path.c_str());
}

TEST(BinaryLog, UnwritableFileFails) {
  auto log = BinaryLog::Create("/nonexistent-dir/x.binlog");
  EXPECT_EQ(log.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(BinaryLog::Create("/tmp/x", {.filter = "*,*"}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rill::test
