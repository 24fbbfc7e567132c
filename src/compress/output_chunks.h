// Where the built-in compressors put their output: pooled chunks that become the caller's only
// when the whole call succeeds, with an optional bound on the bytes produced.
//
//   OutputChunks output(pool, OutputChunks::kChunkSize, limit);
//   std::span<std::byte> space = output.Space();          // at most limit + 1 - produced bytes
//   size_t n = codec_write_into(space);
//   if (!output.Commit(n)) return output.LimitStatus();   // more than `limit` bytes: stop
//   ...
//   output.MoveTo(out);                                    // success: the chunks go to `out`
//
// On any other path the chunks are freed when the OutputChunks is destroyed, so a failed call
// leaves the caller's slice untouched.
//
// Memory bound: Space() never offers more than limit + 1 - produced() bytes, and a chunk is taken
// from the pool only when the previous one is full, so at most ceil((limit + 1) / chunk) chunks
// are ever out: no more than limit + chunk_size bytes of chunk capacity.
//
// Thread safety: thread-compatible.
#ifndef RILL_SRC_COMPRESS_OUTPUT_CHUNKS_H_
#define RILL_SRC_COMPRESS_OUTPUT_CHUNKS_H_

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>

#include "rill/detail/check.h"
#include "rill/mem/buffer_slice.h"
#include "rill/status.h"

namespace rill::internal {

class OutputChunks {
 public:
  // Chunks of large outputs: one HTTP/2 DATA frame's worth, and a pool tier.
  static constexpr size_t kChunkSize = BufferSliceWriter::kDefaultChunkSize;
  static constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();

  // The chunk size for compressing into at most `bound` bytes (the codec's worst case for the
  // input): small inputs get one right-sized chunk instead of a kChunkSize block.
  static size_t ChunkSizeForBound(size_t bound) noexcept {
    return std::clamp<size_t>(bound, 1, kChunkSize);
  }

  OutputChunks(BufferPool& pool, size_t chunk_size, size_t limit = kNoLimit)
      : writer_(&chunks_, pool, chunk_size), limit_(limit) {}
  OutputChunks(const OutputChunks&) = delete;
  OutputChunks& operator=(const OutputChunks&) = delete;

  // Writable space (at least one byte) in the current chunk, cut to what may still be produced:
  // limit + 1 - produced() bytes, so that crossing the limit is seen without producing more.
  std::span<std::byte> Space() {
    RILL_DCHECK_MSG(produced_ <= limit_, "OutputChunks::Space() after the limit was crossed");
    std::span<std::byte> space = writer_.NextSpace();
    const size_t allowed = limit_ - produced_;
    if (allowed < space.size()) space = space.first(allowed + 1);
    return space;
  }

  // Records `n` bytes written at the start of the last Space(). False once more than `limit`
  // bytes were produced (the caller stops and returns LimitStatus()).
  [[nodiscard]] bool Commit(size_t n) {
    writer_.Commit(n);
    produced_ += n;
    return produced_ <= limit_;
  }

  [[nodiscard]] size_t produced() const noexcept { return produced_; }

  // RESOURCE_EXHAUSTED, naming the limit.
  [[nodiscard]] Status LimitStatus() const;

  // Appends everything produced to `out`.
  void MoveTo(BufferSlice& out);

 private:
  // Declared before the writer: the writer flushes into it when destroyed.
  BufferSlice chunks_;
  BufferSliceWriter writer_;
  size_t limit_;
  size_t produced_ = 0;
};

}  // namespace rill::internal

#endif  // RILL_SRC_COMPRESS_OUTPUT_CHUNKS_H_
