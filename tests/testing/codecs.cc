#include "tests/testing/codecs.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "rill/channel.h"
#include "rill/mem/buffer.h"

namespace rill::test {

std::vector<std::shared_ptr<Compressor>> BuiltinCompressors() {
  return {GzipCompressor(), DeflateCompressor(), ZstdCompressor()};
}

std::shared_ptr<Compressor> BuiltinCompressor(std::string_view name) {
  for (auto& compressor : BuiltinCompressors()) {
    if (compressor->name() == name) return compressor;
  }
  return nullptr;
}

std::string ZlibCompress(std::string_view bytes, int window_bits, int level) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::optional<std::string> ZlibDecompress(std::string_view bytes, int window_bits) {
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) return std::nullopt;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  std::array<char, 64 * 1024> chunk;
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(chunk.data());
    z.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk.data(), chunk.size() - z.avail_out);
  }
  const bool complete = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  if (!complete) return std::nullopt;
  return out;
}

std::string ZstdCompress(std::string_view bytes, int level) {
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), level);
  EXPECT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

std::optional<std::string> ZstdDecompress(std::string_view bytes) {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
  std::string out;
  std::array<char, 64 * 1024> chunk;
  size_t rc = 1;
  bool progress = true;
  while (!ZSTD_isError(rc) && progress && (in.pos < in.size || rc != 0)) {
    ZSTD_outBuffer o{chunk.data(), chunk.size(), 0};
    const size_t before = in.pos;
    rc = ZSTD_decompressStream(dctx, &o, &in);
    if (!ZSTD_isError(rc)) out.append(chunk.data(), o.pos);
    progress = o.pos > 0 || in.pos > before;
  }
  ZSTD_freeDCtx(dctx);
  if (ZSTD_isError(rc) || rc != 0 || in.pos != in.size) return std::nullopt;
  return out;
}

std::string ReferenceCompress(std::string_view format, std::string_view bytes) {
  if (format == "gzip") return ZlibCompress(bytes, kGzipWindowBits);
  if (format == "deflate") return ZlibCompress(bytes, kZlibWindowBits);
  return ZstdCompress(bytes);
}

std::optional<std::string> ReferenceDecompress(std::string_view format, std::string_view bytes) {
  if (format == "gzip") return ZlibDecompress(bytes, kGzipWindowBits);
  if (format == "deflate") return ZlibDecompress(bytes, kZlibWindowBits);
  return ZstdDecompress(bytes);
}

std::optional<std::string> RunFilter(const std::string& command, std::string_view input) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string path = std::string(tmpdir != nullptr ? tmpdir : "/tmp") + "/rill_compress_XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) return std::nullopt;
  const bool written = write(fd, input.data(), input.size()) == static_cast<ssize_t>(input.size());
  close(fd);
  std::optional<std::string> output;
  if (written) {
    const std::string full = command + " < '" + path + "'";
    if (FILE* pipe = popen(full.c_str(), "r"); pipe != nullptr) {
      std::string out;
      std::array<char, 64 * 1024> chunk;
      size_t n;
      while ((n = fread(chunk.data(), 1, chunk.size(), pipe)) > 0) out.append(chunk.data(), n);
      const int status = pclose(pipe);
      if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) output = std::move(out);
    }
  }
  unlink(path.c_str());
  return output;
}

rill::Status CountingCompressor::Compress(const BufferSlice& input, BufferPool& pool,
                                          BufferSlice& out) {
  ++compress_calls_;
  return inner_->Compress(input, pool, out);
}

rill::Status CountingCompressor::Decompress(const BufferSlice& input, BufferPool& pool,
                                            size_t limit, BufferSlice& out) {
  ++decompress_calls_;
  return inner_->Decompress(input, pool, limit, out);
}

std::vector<std::shared_ptr<Compressor>> BuiltInsWith(std::shared_ptr<Compressor> replacement) {
  std::vector<std::shared_ptr<Compressor>> out;
  for (auto& compressor : DefaultCompressors()) {
    out.push_back(compressor->name() == replacement->name() ? replacement : compressor);
  }
  return out;
}

CounterMap CountingBuiltIns() {
  CounterMap counters;
  for (auto& compressor : DefaultCompressors()) {
    std::string name(compressor->name());
    counters.emplace(std::move(name), std::make_shared<CountingCompressor>(std::move(compressor)));
  }
  return counters;
}

std::vector<std::shared_ptr<Compressor>> AsCompressors(const CounterMap& counters) {
  std::vector<std::shared_ptr<Compressor>> out;
  // The built-ins' order (gzip, deflate, zstd), so grpc-accept-encoding reads as usual.
  for (std::string_view name : {"gzip", "deflate", "zstd"}) {
    if (auto it = counters.find(name); it != counters.end()) out.push_back(it->second);
  }
  for (const auto& [name, counter] : counters) {
    if (name != "gzip" && name != "deflate" && name != "zstd") out.push_back(counter);
  }
  return out;
}

rill::Status BadCompressor::Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) {
  if (input.size() < min_size_) return real_->Compress(input, pool, out);
  if (bad_ == BadOutput::kGarbage) {
    std::string garbage(std::max<size_t>(input.size() / 2, 1), '\0');
    uint32_t state = 0x9E3779B9u;
    for (char& c : garbage) {
      state = state * 1664525u + 1013904223u;
      c = static_cast<char>(state >> 24);
    }
    garbage[0] = '\xFF';  // no gzip, zlib or zstd header starts with it
    out.Append(Buffer::Copy(garbage, pool));
    return rill::Status();
  }
  BufferSlice whole;
  rill::Status status = real_->Compress(input, pool, whole);
  if (!status.ok()) return status;
  BufferSlice half = whole.TakeFront(whole.size() / 2);
  whole.Free();
  out.Append(std::move(half));
  return rill::Status();
}

rill::Status BombCompressor::Compress(const BufferSlice& input, BufferPool& pool,
                                      BufferSlice& out) {
  if (input.size() < min_size_) return real_->Compress(input, pool, out);
  ++bombs_sent_;
  out.Append(Buffer::Copy(*bomb_, pool));
  return rill::Status();
}

namespace {

constexpr size_t kZeroBlock = 1 << 20;

std::shared_ptr<const std::string> Memoized(
    std::map<uint64_t, std::shared_ptr<const std::string>>& cache, std::mutex& mu, uint64_t size,
    std::string (*make)(uint64_t)) {
  std::lock_guard lock(mu);
  auto& slot = cache[size];
  if (slot == nullptr) slot = std::make_shared<const std::string>(make(size));
  return slot;
}

// Raw deflate output for `n` zeros ending on a byte boundary (Z_SYNC_FLUSH), compressed with
// the densest run-length matching (~1:1030). With `after_zeros` the window is preset with zeros,
// so that the segment may start with a match: it then decodes to `n` zeros wherever the output
// so far ends in zeros, and can be repeated.
std::string DeflateZerosSegment(size_t n, bool after_zeros) {
  const std::vector<unsigned char> zeros(std::max(n, size_t{32 * 1024}), 0);
  z_stream z{};
  RILL_CHECK(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, -15, 9, Z_RLE) == Z_OK);
  if (after_zeros) {
    RILL_CHECK(deflateSetDictionary(&z, zeros.data(), 32 * 1024) == Z_OK);
  }
  std::string out(deflateBound(&z, n) + 64, '\0');
  z.next_in = const_cast<unsigned char*>(zeros.data());
  z.avail_in = static_cast<uInt>(n);
  z.next_out = reinterpret_cast<unsigned char*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  RILL_CHECK(deflate(&z, Z_SYNC_FLUSH) == Z_OK && z.avail_in == 0 && z.avail_out > 0);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

// A gzip member of `size` zeros built without deflating them all: one segment made from scratch,
// then a segment that continues a run of zeros repeated as often as needed, then an empty final
// block and the trailer (CRC-32 of the zeros, combined arithmetically, and the size mod 2^32).
// zlib would emit the same kind of stream for the whole input, only ~100 times slower.
std::string MakeGzipOfZeros(uint64_t size) {
  RILL_CHECK(size > 0);
  const size_t first = size % kZeroBlock == 0 ? kZeroBlock : size % kZeroBlock;
  const uint64_t repeats = (size - first) / kZeroBlock;
  const std::string head = DeflateZerosSegment(first, /*after_zeros=*/false);
  const std::string body = DeflateZerosSegment(kZeroBlock, /*after_zeros=*/true);

  const std::vector<unsigned char> zeros(kZeroBlock, 0);
  const uLong crc_first = crc32(crc32(0L, Z_NULL, 0), zeros.data(), static_cast<uInt>(first));
  const uLong crc_block = crc32(crc32(0L, Z_NULL, 0), zeros.data(), kZeroBlock);
  uLong crc = crc_first;
  for (uint64_t i = 0; i < repeats; ++i) crc = crc32_combine(crc, crc_block, kZeroBlock);

  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);  // gzip, no name, unix
  out.reserve(10 + head.size() + repeats * body.size() + 2 + 8);
  out += head;
  for (uint64_t i = 0; i < repeats; ++i) out += body;
  out += std::string("\x03\x00", 2);  // a final fixed-Huffman block holding only end-of-block
  for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((crc >> shift) & 0xFF);
  for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((size >> shift) & 0xFF);
  return out;
}

std::string MakeZstdOfZeros(uint64_t size) {
  const std::vector<char> zeros(kZeroBlock, 0);
  std::vector<char> chunk(ZSTD_CStreamOutSize());
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  RILL_CHECK(cctx != nullptr);
  RILL_CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3)));
  // No pledged size: the frame does not declare its content size, as a hostile sender's would
  // not, so nothing but the output bound can stop the decompressor.
  std::string out;
  uint64_t left = size;
  while (true) {
    const size_t piece = static_cast<size_t>(std::min<uint64_t>(left, kZeroBlock));
    left -= piece;
    const ZSTD_EndDirective mode = left == 0 ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer in{zeros.data(), piece, 0};
    size_t remaining;
    do {
      ZSTD_outBuffer o{chunk.data(), chunk.size(), 0};
      remaining = ZSTD_compressStream2(cctx, &o, &in, mode);
      RILL_CHECK(!ZSTD_isError(remaining));
      out.append(chunk.data(), o.pos);
    } while (mode == ZSTD_e_end ? remaining != 0 : in.pos < in.size);
    if (mode == ZSTD_e_end) break;
  }
  ZSTD_freeCCtx(cctx);
  return out;
}

}  // namespace

std::shared_ptr<const std::string> GzipOfZeros(uint64_t size) {
  static std::mutex mu;
  static std::map<uint64_t, std::shared_ptr<const std::string>> cache;
  return Memoized(cache, mu, size, &MakeGzipOfZeros);
}

std::shared_ptr<const std::string> ZstdOfZeros(uint64_t size) {
  static std::mutex mu;
  static std::map<uint64_t, std::shared_ptr<const std::string>> cache;
  return Memoized(cache, mu, size, &MakeZstdOfZeros);
}

rill::Status MeasuredDecompressor::Decompress(const BufferSlice& input, BufferPool& pool,
                                              size_t limit, BufferSlice& out) {
  Measurement m;
  m.compressed_size = input.size();
  m.out_at_entry = pool_.StartWindow();
  rill::Status status = real_->Decompress(input, pool, limit, out);
  m.peak_during = pool_.window_peak();
  m.code = status.code();
  m.measured = &pool == &pool_;
  std::lock_guard lock(mu_);
  last_ = m;
  return status;
}

MeasuredDecompressor::Measurement MeasuredDecompressor::last() const {
  std::lock_guard lock(mu_);
  return last_;
}

}  // namespace rill::test
