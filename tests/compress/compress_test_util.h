// Shared pieces of the compression tests: payloads, slices cut into odd pieces, and the
// reference codecs (plain zlib and libzstd calls) that rill's output is checked against.
#ifndef RILL_TESTS_COMPRESS_COMPRESS_TEST_UTIL_H_
#define RILL_TESTS_COMPRESS_COMPRESS_TEST_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/compression.h"
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

// The built-in compressors: gzip, deflate, zstd.
std::vector<std::shared_ptr<Compressor>> BuiltinCompressors();
std::shared_ptr<Compressor> BuiltinCompressor(std::string_view name);

// Reference implementations. Window bits as in zlib: 15 + 16 gzip, 15 zlib ("deflate").
std::string ZlibCompress(std::string_view bytes, int window_bits, int level = 6);
// nullopt when zlib reports an error or the stream is incomplete.
std::optional<std::string> ZlibDecompress(std::string_view bytes, int window_bits);
std::string ZstdCompress(std::string_view bytes, int level = 3);
std::optional<std::string> ZstdDecompress(std::string_view bytes);

inline constexpr int kGzipWindowBits = 15 + 16;
inline constexpr int kZlibWindowBits = 15;

// Reference compression/decompression for one format ("gzip", "deflate", "zstd").
std::string ReferenceCompress(std::string_view format, std::string_view bytes);
std::optional<std::string> ReferenceDecompress(std::string_view format, std::string_view bytes);

// Runs `command` through /bin/sh with `input` on stdin (written to a temporary file); returns
// its stdout, or nullopt if it exits with a non-zero status.
std::optional<std::string> RunFilter(const std::string& command, std::string_view input);

}  // namespace rill::test

#endif  // RILL_TESTS_COMPRESS_COMPRESS_TEST_UTIL_H_
