// Bytes to test with: random, protobuf-like, patterned and printable payloads, and slices cut into
// odd pieces.
//
//   const std::string original = rill::test::ProtobufLike(100000);
//   BufferSlice in = rill::test::SliceOf(original, pool, rill::test::kOddPieces);
#ifndef RILL_TESTS_TESTING_BYTES_H_
#define RILL_TESTS_TESTING_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"

namespace rill::test {

// Uniformly random bytes (incompressible).
std::string RandomBytes(size_t size, uint64_t seed = 1);
// Bytes shaped like serialized protobuf messages (tags, varints, short strings from a small
// vocabulary): large amounts compress to less than half.
std::string ProtobufLike(size_t size, uint64_t seed = 1);

// Odd piece sizes, cycled through by SliceOf.
inline constexpr size_t kOddPieces[] = {1, 7, 1021, 333, 4099, 17, 65537, 3, 1025, 16411};

// `bytes` as one buffer per piece, the piece sizes taken in turn from `pieces` (cycling).
BufferSlice SliceOf(std::string_view bytes, BufferPool& pool, std::span<const size_t> pieces);
// `bytes` in one buffer.
BufferSlice SliceOf(std::string_view bytes, BufferPool& pool);

// Bytes 0, 1, 2, ... 255, 0, 1, ... starting at `seed`.
inline std::string Pattern(size_t size, unsigned seed = 0) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i + seed) & 0xFF);
  return bytes;
}

// Printable text ('a'..'z' repeated, starting at `seed`), for protobuf string fields.
inline std::string Text(size_t size, unsigned seed = 0) {
  std::string text(size, '\0');
  for (size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + (i + seed) % 26);
  return text;
}

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_BYTES_H_
