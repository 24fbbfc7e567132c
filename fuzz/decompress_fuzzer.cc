// Feeds arbitrary bytes, in one to three pooled pieces, to each built-in decompressor (gzip,
// deflate, zstd: the formats a peer may send with grpc-encoding) under an arbitrary limit.
//
// Checked, besides the sanitizers:
//   - success never produces more than the limit; failure appends nothing;
//   - whether it decodes (zstd aside, see below), and into what, does not depend on how the
//     input is cut into pieces;
//   - a larger limit never turns success into failure, nor changes the bytes;
//   - compressing the input and decompressing it gives the input back, and a limit one byte
//     short of it is RESOURCE_EXHAUSTED (a bomb is stopped at the limit);
//   - every pooled block is back at the end.
//
// Input layout:
//   byte 0   bits 0-1: gzip / deflate / zstd; bits 2-7: where to cut the input
//   byte 1-2 the limit (big endian, in bytes)
//   rest     the compressed message as received
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "rill/compression.h"
#include "rill/detail/check.h"
#include "rill/mem/buffer.h"
#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"

namespace {

using rill::Buffer;
using rill::BufferPool;
using rill::BufferSlice;
using rill::Status;
using rill::StatusCode;

BufferSlice Pieces(std::string_view bytes, size_t cut_a, size_t cut_b, BufferPool& pool) {
  BufferSlice slice;
  cut_a = std::min(cut_a, bytes.size());
  cut_b = std::min(std::max(cut_b, cut_a), bytes.size());
  slice.Append(Buffer::Copy(bytes.substr(0, cut_a), pool));
  slice.Append(Buffer::Copy(bytes.substr(cut_a, cut_b - cut_a), pool));
  slice.Append(Buffer::Copy(bytes.substr(cut_b), pool));
  return slice;
}

struct Outcome {
  Status status;
  std::string bytes;
};

Outcome Decompress(rill::Compressor& codec, const BufferSlice& input, size_t limit,
                   BufferPool& pool) {
  BufferSlice out;
  out.Append(Buffer::Copy(std::string_view("keep"), pool));  // must survive a failure
  Outcome outcome;
  outcome.status = codec.Decompress(input, pool, limit, out);
  std::string all = out.Materialize();
  RILL_CHECK_MSG(all.substr(0, 4) == "keep", "decompression touched what out held");
  outcome.bytes = all.substr(4);
  if (outcome.status.ok()) {
    RILL_CHECK_MSG(outcome.bytes.size() <= limit, "decompressed past the limit");
  } else {
    RILL_CHECK_MSG(outcome.bytes.empty(), "a failed decompression appended bytes");
    RILL_CHECK(outcome.status.code() == StatusCode::kInternal ||
               outcome.status.code() == StatusCode::kResourceExhausted);
  }
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  static const std::shared_ptr<rill::Compressor> kCodecs[] = {
      rill::GzipCompressor(), rill::DeflateCompressor(), rill::ZstdCompressor()};
  rill::Compressor& codec = *kCodecs[(data[0] & 3) % 3];
  const size_t limit = (size_t{data[1]} << 8) | data[2];
  const std::string_view input(reinterpret_cast<const char*>(data + 3), size - 3);
  const size_t cut_a = (data[0] >> 2) % (input.size() + 1);
  const size_t cut_b = cut_a + (data[0] >> 4) * 7;

  BufferPool& pool = rill::DefaultBufferPool();
  const uint64_t blocks_before = pool.Stats().blocks_out;
  {
    const BufferSlice whole = Pieces(input, input.size(), input.size(), pool);
    const BufferSlice cut = Pieces(input, cut_a, cut_b, pool);
    const Outcome first = Decompress(codec, whole, limit, pool);
    const Outcome second = Decompress(codec, cut, limit, pool);
    // Which error a message that is both corrupt and too large gets may depend on where the
    // decoder stood when it noticed; whether it decodes, and into what, may not. Except that
    // libzstd decodes a frame that arrives whole in one pass, with checks its streaming
    // decoder lacks (a compressed block of size 0, say): for zstd, a malformed frame may be
    // refused whole and accepted in pieces, but never decode into different bytes.
    const bool zstd = (data[0] & 3) % 3 == 2;
    const bool same = (first.status.ok() == second.status.ok() ||
                       (zstd && (!first.status.ok() || !second.status.ok()))) &&
                      (!first.status.ok() || !second.status.ok() || first.bytes == second.bytes);
    if (!same) {
      std::fprintf(stderr, "whole: %s (%zu bytes); cut at %zu/%zu: %s (%zu bytes)\n",
                   first.status.ToString().c_str(), first.bytes.size(), cut_a, cut_b,
                   second.status.ToString().c_str(), second.bytes.size());
    }
    RILL_CHECK_MSG(same, "the outcome depends on how the input is cut");
    if (first.status.ok()) {
      const Outcome more = Decompress(codec, whole, limit * 2 + 1, pool);
      RILL_CHECK_MSG(more.status.ok() && more.bytes == first.bytes,
                     "a larger limit changed a successful decompression");
    }

    // Round trip of the input itself, with the limit exactly its size and one byte short.
    BufferSlice compressed;
    RILL_CHECK(codec.Compress(cut, pool, compressed).ok());
    const Outcome back = Decompress(codec, compressed, input.size(), pool);
    RILL_CHECK_MSG(back.status.ok() && back.bytes == input, "round trip lost bytes");
    if (!input.empty()) {
      const Outcome short_by_one = Decompress(codec, compressed, input.size() - 1, pool);
      RILL_CHECK_MSG(short_by_one.status.code() == StatusCode::kResourceExhausted,
                     "output past the limit was not refused");
    }
  }
  RILL_CHECK_MSG(pool.Stats().blocks_out == blocks_before, "a pooled buffer block leaked");
  return 0;
}
