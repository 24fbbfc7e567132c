// One Compressor object used by two threads at once: each thread has its own zlib and zstd
// contexts, so the calls neither interfere nor share state (also run under ThreadSanitizer).
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "rill/compression.h"
#include "rill/mem/buffer_pool.h"
#include "tests/testing/bytes.h"
#include "tests/testing/codecs.h"

namespace rill::test {
namespace {

TEST(ConcurrencyTest, TwoThreadsShareEachCompressor) {
  const std::vector<std::shared_ptr<Compressor>> compressors = {
      GzipCompressor(), DeflateCompressor(), ZstdCompressor(), GzipCompressor(1),
      ZstdCompressor(1)};
  constexpr size_t kSizes[] = {0, 100, 1024, 5000, 70000, 300000};
  std::vector<std::string> payloads;
  for (size_t size : kSizes) payloads.push_back(ProtobufLike(size, size));
  payloads.push_back(RandomBytes(40000));

  std::atomic<int> failures{0};
  auto work = [&](int thread) {
    BufferPool& pool = DefaultBufferPool();
    for (int round = 0; round < 30; ++round) {
      for (size_t c = 0; c < compressors.size(); ++c) {
        // The threads walk the compressors and payloads in different orders, so that the same
        // object runs in both threads at the same time with different inputs and levels.
        Compressor& compressor = *compressors[(c + thread) % compressors.size()];
        const std::string& payload = payloads[(round + c * (thread + 1)) % payloads.size()];
        BufferSlice compressed;
        if (!compressor.Compress(SliceOf(payload, pool, kOddPieces), pool, compressed).ok()) {
          ++failures;
          continue;
        }
        BufferSlice back;
        if (!compressor.Decompress(compressed, pool, payload.size(), back).ok() ||
            back.Materialize() != payload) {
          ++failures;
        }
        // And the limit still holds mid-flight.
        if (!payload.empty()) {
          BufferSlice over;
          if (compressor.Decompress(compressed, pool, payload.size() - 1, over).code() !=
              StatusCode::kResourceExhausted) {
            ++failures;
          }
        }
      }
    }
  };
  std::thread a(work, 0);
  std::thread b(work, 1);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace rill::test
