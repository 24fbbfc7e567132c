// Compression test pieces: reference codecs (plain zlib and libzstd calls, and the gzip and zstd
// commands) that rill's output is checked against, and compressors that count, lie, explode or
// measure. Payloads and odd slices are in bytes.h.
//
//   const std::string original = rill::test::ProtobufLike(100000);
//   BufferSlice in = rill::test::SliceOf(original, pool, rill::test::kOddPieces);
//   auto back = rill::test::ReferenceDecompress("gzip", compressed);
#ifndef RILL_TESTS_TESTING_CODECS_H_
#define RILL_TESTS_TESTING_CODECS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/compression.h"
#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"
#include "tests/testing/bytes.h"
#include "tests/testing/pools.h"

namespace rill::test {

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
// its stdout, or nullopt if it exits with a non-zero status (the gzip and zstd commands).
std::optional<std::string> RunFilter(const std::string& command, std::string_view input);

// The chunk the built-in decompressors write into (BufferSliceWriter::kDefaultChunkSize).
inline constexpr size_t kDecompressChunk = 16 * 1024;

// Forwards to `inner` and counts the calls. Thread-safe.
class CountingCompressor final : public Compressor {
 public:
  explicit CountingCompressor(std::shared_ptr<Compressor> inner) : inner_(std::move(inner)) {}
  [[nodiscard]] std::string_view name() const override { return inner_->name(); }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override;
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override;

  [[nodiscard]] int compress_calls() const { return compress_calls_.load(); }
  [[nodiscard]] int decompress_calls() const { return decompress_calls_.load(); }
  void Reset() {
    compress_calls_ = 0;
    decompress_calls_ = 0;
  }

 private:
  std::shared_ptr<Compressor> inner_;
  std::atomic<int> compress_calls_{0};
  std::atomic<int> decompress_calls_{0};
};

// CountingCompressor wrappers of gzip, deflate and zstd, by name.
using CounterMap = std::map<std::string, std::shared_ptr<CountingCompressor>, std::less<>>;
CounterMap CountingBuiltIns();

// The built-ins, with `replacement` instead of the one of the same name.
std::vector<std::shared_ptr<Compressor>> BuiltInsWith(std::shared_ptr<Compressor> replacement);
std::vector<std::shared_ptr<Compressor>> AsCompressors(const CounterMap& counters);

// What a misbehaving sender's compressor emits instead of a valid stream.
enum class BadOutput {
  kGarbage,    // bytes that are no stream of any format (half the input's size)
  kTruncated,  // the real compressor's output, cut after half of it
};

// Named like a real encoding; compresses with `real` and then spoils the output as `bad` says,
// for messages of at least `min_size` bytes (smaller ones are compressed properly). Decompresses
// with `real`. Thread-safe.
class BadCompressor final : public Compressor {
 public:
  BadCompressor(std::shared_ptr<Compressor> real, BadOutput bad, size_t min_size = 0)
      : real_(std::move(real)), bad_(bad), min_size_(min_size) {}
  [[nodiscard]] std::string_view name() const override { return real_->name(); }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override;
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override {
    return real_->Decompress(input, pool, limit, out);
  }

 private:
  std::shared_ptr<Compressor> real_;
  BadOutput bad_;
  size_t min_size_;
};

// Named like a real encoding; for messages of at least `min_size` bytes ignores the input and
// emits `bomb`, a valid compressed stream that expands far beyond any limit. Smaller messages
// and decompression go to `real`. Thread-safe.
class BombCompressor final : public Compressor {
 public:
  BombCompressor(std::shared_ptr<Compressor> real, std::shared_ptr<const std::string> bomb,
                 size_t min_size)
      : real_(std::move(real)), bomb_(std::move(bomb)), min_size_(min_size) {}
  [[nodiscard]] std::string_view name() const override { return real_->name(); }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override;
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override {
    return real_->Decompress(input, pool, limit, out);
  }
  [[nodiscard]] int bombs_sent() const { return bombs_sent_.load(); }

 private:
  std::shared_ptr<Compressor> real_;
  std::shared_ptr<const std::string> bomb_;
  size_t min_size_;
  std::atomic<int> bombs_sent_{0};
};

// A compressor under a name no built-in has (deflate inside, so its output does shrink).
class RenamedCompressor final : public Compressor {
 public:
  RenamedCompressor(std::string name, std::shared_ptr<Compressor> inner)
      : name_(std::move(name)), inner_(std::move(inner)) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override {
    return inner_->Compress(input, pool, out);
  }
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override {
    return inner_->Decompress(input, pool, limit, out);
  }

 private:
  std::string name_;
  std::shared_ptr<Compressor> inner_;
};

// gzip and zstd streams of `size` zero bytes; the zeros are never materialized. zstd streams a
// zero block through the compressor (one frame that does not declare its size); gzip deflates
// one block of zeros that continues a run of zeros and repeats it (a single member, ~1:1030, as
// dense as zlib's own output, in milliseconds). Computed once per process and size.
std::shared_ptr<const std::string> GzipOfZeros(uint64_t size);
std::shared_ptr<const std::string> ZstdOfZeros(uint64_t size);
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

// Wraps a real decompressor and measures `pool` around each Decompress: the pooled bytes out
// when it started (the compressed message and the read blocks holding it) and the peak while it
// ran. Compress forwards untouched. Thread-safe (measurements of the last call only).
class MeasuredDecompressor final : public Compressor {
 public:
  MeasuredDecompressor(std::shared_ptr<Compressor> real, PeakPool& pool)
      : real_(std::move(real)), pool_(pool) {}
  [[nodiscard]] std::string_view name() const override { return real_->name(); }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override {
    return real_->Compress(input, pool, out);
  }
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override;

  struct Measurement {
    size_t compressed_size = 0;  // the input's bytes
    size_t out_at_entry = 0;     // pooled bytes out when Decompress was called
    size_t peak_during = 0;      // the pool's peak while it ran
    StatusCode code = StatusCode::kOk;
    bool measured = false;
  };
  [[nodiscard]] Measurement last() const;

 private:
  std::shared_ptr<Compressor> real_;
  PeakPool& pool_;
  mutable std::mutex mu_;
  Measurement last_;
};

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_CODECS_H_
