// gzip (RFC 1952) and deflate on zlib. gRPC's "deflate" is the zlib format (RFC 1950, window
// bits 15), as HTTP's deflate content coding and grpc core's message compression use it; "gzip"
// is window bits 15 + 16.
//
// Each thread keeps one deflate and one inflate stream per format, created on first use and
// reset (deflateReset/inflateReset keep every buffer zlib allocated) before each message, so a
// thread allocates nothing per message once its streams exist.
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "rill/compression.h"
#include "rill/detail/check.h"
#include "src/compress/input_pieces.h"
#include "src/compress/output_chunks.h"

namespace rill {
namespace {

using internal::InputPieces;
using internal::OutputChunks;

enum class ZlibFormat { kGzip = 0, kDeflate = 1 };
constexpr size_t kFormatCount = 2;

constexpr int kWindowBits = 15;
constexpr int kGzipWrapper = 16;  // added to the window bits: gzip header and trailer
constexpr int kMemLevel = 8;      // zlib's default
// zlib counts bytes in uInt: longer buffers are fed in pieces.
constexpr size_t kMaxPiece = std::numeric_limits<uInt>::max();

constexpr int WindowBits(ZlibFormat format) {
  return format == ZlibFormat::kGzip ? kWindowBits + kGzipWrapper : kWindowBits;
}

constexpr std::string_view FormatName(ZlibFormat format) {
  return format == ZlibFormat::kGzip ? "gzip" : "deflate";
}

Bytef* InBytes(const std::byte* p) {
  // zlib's next_in is not const-qualified but is only read.
  return const_cast<Bytef*>(reinterpret_cast<const Bytef*>(p));
}

Status ZlibError(ZlibFormat format, std::string_view what, const z_stream& stream) {
  std::string message(FormatName(format));
  message.append(": ").append(what);
  if (stream.msg != nullptr) message.append(" (").append(stream.msg).append(")");
  return Status(StatusCode::kInternal, message);
}

// One thread's deflate stream for one format. Its level follows the compressor using it:
// deflateParams on a freshly reset stream only changes the match parameters.
// Thread-compatible: every thread has its own (DeflaterFor).
class ThreadDeflater {
 public:
  ThreadDeflater() = default;
  ThreadDeflater(const ThreadDeflater&) = delete;
  ThreadDeflater& operator=(const ThreadDeflater&) = delete;
  ~ThreadDeflater() {
    if (ready_) deflateEnd(&stream_);
  }

  // The stream, at the start of a message compressed at `level`; null if zlib could not
  // allocate its state.
  z_stream* Begin(ZlibFormat format, int level) {
    if (!ready_) {
      stream_ = z_stream{};
      if (deflateInit2(&stream_, level, Z_DEFLATED, WindowBits(format), kMemLevel,
                       Z_DEFAULT_STRATEGY) != Z_OK) {
        return nullptr;
      }
      ready_ = true;
      level_ = level;
      return &stream_;
    }
    if (deflateReset(&stream_) != Z_OK) return nullptr;
    if (level != level_) {
      if (deflateParams(&stream_, level, Z_DEFAULT_STRATEGY) != Z_OK) return nullptr;
      level_ = level;
    }
    return &stream_;
  }

 private:
  z_stream stream_{};
  bool ready_ = false;
  int level_ = Z_DEFAULT_COMPRESSION;
};

// One thread's inflate stream for one format. Thread-compatible: every thread has its own
// (InflaterFor).
class ThreadInflater {
 public:
  ThreadInflater() = default;
  ThreadInflater(const ThreadInflater&) = delete;
  ThreadInflater& operator=(const ThreadInflater&) = delete;
  ~ThreadInflater() {
    if (ready_) inflateEnd(&stream_);
  }

  // The stream, at the start of a message; null if zlib could not allocate its state.
  z_stream* Begin(ZlibFormat format) {
    if (!ready_) {
      stream_ = z_stream{};
      if (inflateInit2(&stream_, WindowBits(format)) != Z_OK) return nullptr;
      ready_ = true;
      return &stream_;
    }
    return inflateReset(&stream_) == Z_OK ? &stream_ : nullptr;
  }

 private:
  z_stream stream_{};
  bool ready_ = false;
};

ThreadDeflater& DeflaterFor(ZlibFormat format) {
  thread_local ThreadDeflater deflaters[kFormatCount];
  return deflaters[static_cast<size_t>(format)];
}

ThreadInflater& InflaterFor(ZlibFormat format) {
  thread_local ThreadInflater inflaters[kFormatCount];
  return inflaters[static_cast<size_t>(format)];
}

// Thread-safe: the level is fixed and every stream is the calling thread's own.
class ZlibCompressor final : public Compressor {
 public:
  ZlibCompressor(ZlibFormat format, int level) : format_(format), level_(level) {}

  std::string_view name() const override { return FormatName(format_); }
  Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override;
  Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                    BufferSlice& out) override;

 private:
  const ZlibFormat format_;
  const int level_;
};

Status ZlibCompressor::Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) {
  z_stream* z = DeflaterFor(format_).Begin(format_, level_);
  if (z == nullptr) {
    return Status(StatusCode::kInternal,
                  std::string(FormatName(format_)) + ": cannot set up the compressor");
  }
  OutputChunks output(pool, OutputChunks::ChunkSizeForBound(deflateBound(z, input.size())));
  InputPieces pieces(input, kMaxPiece);
  std::span<const std::byte> piece = pieces.Next();
  while (true) {
    // The last piece (or none, for an empty message) goes in with Z_FINISH.
    const bool last = pieces.AtEnd();
    z->next_in = InBytes(piece.data());
    z->avail_in = static_cast<uInt>(piece.size());
    int rc;
    do {
      std::span<std::byte> space = output.Space();
      space = space.first(std::min(space.size(), kMaxPiece));
      z->next_out = reinterpret_cast<Bytef*>(space.data());
      z->avail_out = static_cast<uInt>(space.size());
      rc = deflate(z, last ? Z_FINISH : Z_NO_FLUSH);
      (void)output.Commit(space.size() - z->avail_out);  // no limit: never false
      // With input and output space deflate always progresses: Z_BUF_ERROR would loop.
      if (rc != Z_OK && rc != Z_STREAM_END) return ZlibError(format_, "deflate failed", *z);
    } while (last ? rc != Z_STREAM_END : z->avail_in > 0);
    if (last) break;
    piece = pieces.Next();
  }
  output.MoveTo(out);
  return OkStatus();
}

Status ZlibCompressor::Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                                  BufferSlice& out) {
  z_stream* z = InflaterFor(format_).Begin(format_);
  if (z == nullptr) {
    return Status(StatusCode::kInternal,
                  std::string(FormatName(format_)) + ": cannot set up the decompressor");
  }
  OutputChunks output(pool, OutputChunks::kChunkSize, limit);
  InputPieces pieces(input, kMaxPiece);
  z->next_in = nullptr;
  z->avail_in = 0;
  bool stream_end = false;
  while (true) {
    if (z->avail_in == 0) {
      const std::span<const std::byte> piece = pieces.Next();
      z->next_in = InBytes(piece.data());
      z->avail_in = static_cast<uInt>(piece.size());
    }
    if (stream_end) {
      if (z->avail_in == 0) break;  // every byte consumed and the stream complete
      if (format_ != ZlibFormat::kGzip) {
        return Status(StatusCode::kInternal,
                      "deflate: " + std::to_string(input.size() - z->total_in) +
                          " bytes after the end of the compressed stream");
      }
      // A gzip stream may be a series of members (RFC 1952 2.2), as `gzip -d` and Go's gzip
      // reader accept; each one is checked in full. Anything else fails the header check.
      if (inflateReset(z) != Z_OK) return ZlibError(format_, "inflateReset failed", *z);
      stream_end = false;
    }
    std::span<std::byte> space = output.Space();
    space = space.first(std::min(space.size(), kMaxPiece));
    z->next_out = reinterpret_cast<Bytef*>(space.data());
    z->avail_out = static_cast<uInt>(space.size());
    const int rc = inflate(z, Z_NO_FLUSH);
    if (!output.Commit(space.size() - z->avail_out)) return output.LimitStatus();
    switch (rc) {
      case Z_STREAM_END:
        stream_end = true;
        break;
      case Z_OK:
      case Z_BUF_ERROR:
        // inflate stops with output space left only when it needs more input.
        if (z->avail_out > 0 && z->avail_in == 0 && pieces.AtEnd()) {
          return Status(StatusCode::kInternal,
                        std::string(FormatName(format_)) +
                            ": compressed data ends before the end of the stream");
        }
        if (rc == Z_BUF_ERROR && z->avail_in > 0) {
          return ZlibError(format_, "inflate made no progress", *z);
        }
        break;
      default:  // Z_DATA_ERROR, Z_NEED_DICT, Z_MEM_ERROR, Z_STREAM_ERROR
        return ZlibError(format_, "corrupt compressed data", *z);
    }
  }
  output.MoveTo(out);
  return OkStatus();
}

void CheckZlibLevel(int level) {
  RILL_CHECK_MSG(level == Z_DEFAULT_COMPRESSION || (level >= 0 && level <= 9),
                 "zlib compression level must be -1 (default) or 0..9");
}

}  // namespace

std::shared_ptr<Compressor> GzipCompressor(int level) {
  CheckZlibLevel(level);
  return std::make_shared<ZlibCompressor>(ZlibFormat::kGzip, level);
}

std::shared_ptr<Compressor> DeflateCompressor(int level) {
  CheckZlibLevel(level);
  return std::make_shared<ZlibCompressor>(ZlibFormat::kDeflate, level);
}

}  // namespace rill
