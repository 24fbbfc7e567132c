// The allocator nghttp2 runs on: every size gets a block it may fill, realloc keeps the bytes,
// and blocks are reused after a free. The session itself (2.9 KiB in nghttp2 1.52) lands in a
// class that fits it closely: a connection's session runs as before on the allocator.
#include "src/http2/nghttp2_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace rill::internal {
namespace {

void* Malloc(size_t size) { return Nghttp2Allocator()->malloc(size, nullptr); }
void Free(void* ptr) { Nghttp2Allocator()->free(ptr, nullptr); }

TEST(Nghttp2Memory, EverySizeGetsABlockItCanFill) {
  std::vector<void*> blocks;
  for (size_t size = 1; size <= 40000; size += (size < 1024 ? 1 : 7)) {
    void* block = Malloc(size);
    ASSERT_NE(block, nullptr) << size;
    ASSERT_EQ(reinterpret_cast<uintptr_t>(block) % 16, 0u) << size;
    std::memset(block, 0xa5, size);  // ASan (and the neighbours' contents) catch an overrun
    blocks.push_back(block);
  }
  for (void* block : blocks) Free(block);
}

TEST(Nghttp2Memory, ReallocKeepsTheBytes) {
  auto* bytes = static_cast<unsigned char*>(Malloc(40));
  for (int i = 0; i < 40; ++i) bytes[i] = static_cast<unsigned char>(i);
  for (size_t size : {48u, 49u, 3000u, 3072u, 3073u, 16384u, 16394u, 70000u}) {
    bytes = static_cast<unsigned char*>(Nghttp2Allocator()->realloc(bytes, size, nullptr));
    ASSERT_NE(bytes, nullptr);
    for (int i = 0; i < 40; ++i) ASSERT_EQ(bytes[i], i) << "after growing to " << size;
    std::memset(bytes + 40, 0, size - 40);
  }
  Free(bytes);
}

TEST(Nghttp2Memory, CallocZeroes) {
  void* dirty = Malloc(2928);
  std::memset(dirty, 0xff, 2928);
  Free(dirty);
  auto* clean = static_cast<unsigned char*>(Nghttp2Allocator()->calloc(1, 2928, nullptr));
  for (size_t i = 0; i < 2928; ++i) ASSERT_EQ(clean[i], 0) << i;
  Free(clean);
}

TEST(Nghttp2Memory, ASessionRunsOnIt) {
  nghttp2_session_callbacks* callbacks = nullptr;
  ASSERT_EQ(nghttp2_session_callbacks_new(&callbacks), 0);
  for (int i = 0; i < 100; ++i) {  // created and destroyed again and again: blocks are reused
    nghttp2_session* session = nullptr;
    ASSERT_EQ(nghttp2_session_server_new3(&session, callbacks, nullptr, nullptr,
                                          Nghttp2Allocator()),
              0);
    ASSERT_EQ(nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0), 0);
    const uint8_t* data = nullptr;
    EXPECT_GT(nghttp2_session_mem_send(session, &data), 0);
    nghttp2_session_del(session);
  }
  nghttp2_session_callbacks_del(callbacks);
}

}  // namespace
}  // namespace rill::internal
