// Copies of payload bytes in user space (outside protobuf), counted by rill's debug counter
// (rill::CopiedPayloadBytes()): 100 MiB in 1 MiB messages (16 MiB under sanitizers), one
// direction at a time, with the windows left dynamic and with 64 KiB static windows. The budget
// (DESIGN §1) is at most one copy per payload byte per direction.
//
// Client and server share the process, so each direction is measured alone: client → server
// through Sink, server → client through Source. A direction's figure counts both ends: the
// sender's (framing) and the receiver's (small DATA chunks, compaction, flattening).
#include <gtest/gtest.h>

#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/mem/buffer_pool.h"
#include "tests/testing/streamer.h"

namespace rill::test {
namespace {

constexpr size_t kMessageSize = 1024 * 1024;
constexpr uint64_t kMessages = kSanitized ? 16 : 100;
constexpr double kPayload = static_cast<double>(kMessageSize * kMessages);

struct Windows {
  const char* name;
  uint32_t window;  // 0: dynamic
};

class CopyCount : public ::testing::TestWithParam<Windows> {
 protected:
  StreamingEnv::Config MakeConfig() const {
    return StreamingEnv::Config::WithWindows(GetParam().window);
  }

  // Prints and records the payload bytes copied per payload byte sent since CopiedPayloadBytes()
  // was `before`, which must be at most one copy.
  void ExpectAtMostOneCopyPerByte(uint64_t before, const char* direction) {
    const double copied = static_cast<double>(CopiedPayloadBytes() - before);
    const double per_byte = copied / kPayload;
    std::printf(
        "[ measure  ] %s windows, %s: %.0f bytes copied for %.0f payload bytes = %.4f copies per "
        "byte\n",
        GetParam().name, direction, copied, kPayload, per_byte);
    RecordProperty("copies_per_byte", std::to_string(per_byte));
    EXPECT_LE(per_byte, 1.0);
  }
};

TEST_P(CopyCount, ClientToServerAtMostOneCopyPerByte) {
  StreamingEnv env(MakeConfig());
  ASSERT_TRUE(env.ok());
  st::Chunk chunk;
  MakeChunk(0, kMessageSize, chunk);  // warms the pattern outside the measurement
  const uint64_t before = CopiedPayloadBytes();
  {
    ClientContext ctx;
    st::SinkReply reply;
    auto writer = env.stub().Sink(ctx, &reply);
    for (uint64_t i = 0; i < kMessages; ++i) {
      MakeChunk(i, kMessageSize, chunk);
      ASSERT_TRUE(writer->BlockingWrite(chunk)) << "write " << i;
    }
    const Status status = writer->BlockingFinish();
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(reply.count(), kMessages);
    EXPECT_EQ(reply.bytes(), kMessages * kMessageSize);
  }
  ExpectAtMostOneCopyPerByte(before, "client -> server");
  env.Stop();
}

TEST_P(CopyCount, ServerToClientAtMostOneCopyPerByte) {
  StreamingEnv env(MakeConfig());
  ASSERT_TRUE(env.ok());
  st::Chunk chunk;
  MakeChunk(0, kMessageSize, chunk);
  const uint64_t before = CopiedPayloadBytes();
  ASSERT_NO_FATAL_FAILURE(ExpectSourceStream(env.stub(), kMessages, kMessageSize, chunk));
  ExpectAtMostOneCopyPerByte(before, "server -> client");
  env.Stop();
}

INSTANTIATE_TEST_SUITE_P(Windows, CopyCount,
                         ::testing::Values(Windows{"Dynamic", 0}, Windows{"Static64KiB", 65536}),
                         [](const ::testing::TestParamInfo<Windows>& param) {
                           return std::string(param.param.name);
                         });

}  // namespace
}  // namespace rill::test
