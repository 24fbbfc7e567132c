#include "tests/compress/compress_test_util.h"

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
#include <fstream>
#include <random>

namespace rill::test {

std::string RandomBytes(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string bytes(size, '\0');
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    const uint64_t word = rng();
    std::memcpy(bytes.data() + i, &word, 8);
  }
  for (; i < size; ++i) bytes[i] = static_cast<char>(rng());
  return bytes;
}

std::string ProtobufLike(size_t size, uint64_t seed) {
  static constexpr std::string_view kWords[] = {
      "alpha", "bravo",  "charlie", "delta", "echo",    "foxtrot",  "golf",  "hotel",
      "india", "juliet", "kilo",    "lima",  "mike",    "november", "oscar", "papa",
      "user",  "order",  "status",  "ok",    "pending", "shipped",  "id",    "name"};
  std::mt19937_64 rng(seed);
  std::string bytes;
  bytes.reserve(size + 64);
  while (bytes.size() < size) {
    // field 1: varint; field 2: string; field 3: fixed32.
    bytes.push_back(0x08);
    uint64_t v = rng() % 100000;
    do {
      bytes.push_back(static_cast<char>((v & 0x7F) | (v >= 0x80 ? 0x80 : 0)));
      v >>= 7;
    } while (v != 0);
    const std::string_view word = kWords[rng() % std::size(kWords)];
    bytes.push_back(0x12);
    bytes.push_back(static_cast<char>(word.size()));
    bytes.append(word);
    bytes.push_back(0x1d);
    const uint32_t fixed = static_cast<uint32_t>(rng() % 16);
    bytes.append(reinterpret_cast<const char*>(&fixed), 4);
  }
  bytes.resize(size);
  return bytes;
}

BufferSlice SliceOf(std::string_view bytes, BufferPool& pool, std::span<const size_t> pieces) {
  BufferSlice slice;
  size_t offset = 0;
  for (size_t i = 0; offset < bytes.size(); ++i) {
    const size_t n = std::min(pieces[i % pieces.size()], bytes.size() - offset);
    slice.Append(Buffer::Copy(bytes.substr(offset, n), pool));
    offset += n;
  }
  return slice;
}

BufferSlice SliceOf(std::string_view bytes, BufferPool& pool) {
  return BufferSlice(Buffer::Copy(bytes, pool));
}

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

}  // namespace rill::test
