// zstd (RFC 8878) on libzstd's streaming API: ZSTD_compressStream2 and ZSTD_decompressStream.
//
// Each thread keeps one ZSTD_CCtx and one ZSTD_DCtx, created on first use and reset per message
// (ZSTD_reset_session_only keeps their workspaces), so a thread allocates nothing per message
// once its contexts have grown to the sizes its messages need.
//
// Memory outside the pool: the decompression context holds the history window a frame declares.
// ZSTD_d_windowLogMax caps it (see WindowLogMaxFor); a frame that needs more is refused with
// RESOURCE_EXHAUSTED before anything is allocated for it.
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <cstddef>
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

// Windows of up to 8 MiB are always accepted: that covers libzstd's levels 1..19 and other
// common encoders' defaults when they do not know the message size in advance.
constexpr int kMinWindowLogMax = 23;
// zstd's own default cap (ZSTD_WINDOWLOG_LIMIT_DEFAULT): 128 MiB.
constexpr int kMaxWindowLogMax = 27;

// The largest window a frame may declare when at most `limit` bytes may be produced: a window
// larger than the whole output is never needed, but encoders that do not know the size declare
// their default, so small limits still accept 8 MiB.
int WindowLogMaxFor(size_t limit) {
  const int log = limit <= 1 ? 0 : static_cast<int>(std::bit_width(limit - 1));
  return std::clamp(log, kMinWindowLogMax, kMaxWindowLogMax);
}

Status ZstdError(std::string_view what, size_t code) {
  return Status(
      StatusCode::kInternal,
      std::string("zstd: ").append(what).append(" (").append(ZSTD_getErrorName(code)) + ")");
}

// One thread's compression context. Checksums are on (as in the zstd tool): zstd frames carry
// no other integrity check. Thread-compatible: every thread has its own (CompressionContext).
class ThreadCompressionContext {
 public:
  ThreadCompressionContext() = default;
  ThreadCompressionContext(const ThreadCompressionContext&) = delete;
  ThreadCompressionContext& operator=(const ThreadCompressionContext&) = delete;
  ~ThreadCompressionContext() { ZSTD_freeCCtx(cctx_); }

  // The context, at the start of a frame of `size` bytes compressed at `level`; null if zstd
  // could not allocate it. The size goes into the frame header and lets zstd size its tables to
  // the message.
  ZSTD_CCtx* Begin(int level, size_t size) {
    if (cctx_ == nullptr) {
      cctx_ = ZSTD_createCCtx();
      if (cctx_ == nullptr) return nullptr;
      if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1))) return nullptr;
      level_set_ = false;
    } else if (ZSTD_isError(ZSTD_CCtx_reset(cctx_, ZSTD_reset_session_only))) {
      return nullptr;
    }
    if (!level_set_ || level != level_) {
      if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level))) {
        return nullptr;
      }
      level_ = level;
      level_set_ = true;
    }
    if (ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cctx_, size))) return nullptr;
    return cctx_;
  }

 private:
  ZSTD_CCtx* cctx_ = nullptr;
  bool level_set_ = false;
  int level_ = 0;
};

// One thread's decompression context. Thread-compatible: every thread has its own
// (DecompressionContext).
class ThreadDecompressionContext {
 public:
  ThreadDecompressionContext() = default;
  ThreadDecompressionContext(const ThreadDecompressionContext&) = delete;
  ThreadDecompressionContext& operator=(const ThreadDecompressionContext&) = delete;
  ~ThreadDecompressionContext() { ZSTD_freeDCtx(dctx_); }

  // The context, at the start of a message, accepting windows up to 2^window_log_max bytes;
  // null if zstd could not allocate it.
  ZSTD_DCtx* Begin(int window_log_max) {
    if (dctx_ == nullptr) {
      dctx_ = ZSTD_createDCtx();
      if (dctx_ == nullptr) return nullptr;
      window_log_max_ = 0;
    } else if (ZSTD_isError(ZSTD_DCtx_reset(dctx_, ZSTD_reset_session_only))) {
      return nullptr;
    }
    if (window_log_max != window_log_max_) {
      if (ZSTD_isError(ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, window_log_max))) {
        return nullptr;
      }
      window_log_max_ = window_log_max;
    }
    return dctx_;
  }

 private:
  ZSTD_DCtx* dctx_ = nullptr;
  int window_log_max_ = 0;
};

// The longest zstd frame header (RFC 8878 3.1.1: magic number, descriptor, window, dictionary
// id, content size).
constexpr size_t kMaxFrameHeaderSize = 18;

ThreadCompressionContext& CompressionContext() {
  thread_local ThreadCompressionContext context;
  return context;
}

ThreadDecompressionContext& DecompressionContext() {
  thread_local ThreadDecompressionContext context;
  return context;
}

// Thread-safe: the level is fixed and every context is the calling thread's own.
class ZstdCompressorImpl final : public Compressor {
 public:
  explicit ZstdCompressorImpl(int level) : level_(level) {}

  std::string_view name() const override { return "zstd"; }
  Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override;
  Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                    BufferSlice& out) override;

 private:
  const int level_;
};

Status ZstdCompressorImpl::Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) {
  ZSTD_CCtx* cctx = CompressionContext().Begin(level_, input.size());
  if (cctx == nullptr) return Status(StatusCode::kInternal, "zstd: cannot set up the compressor");
  OutputChunks output(pool, OutputChunks::ChunkSizeForBound(ZSTD_compressBound(input.size())));
  InputPieces pieces(input);
  std::span<const std::byte> piece = pieces.Next();
  while (true) {
    // The last piece (or none, for an empty message) goes in with ZSTD_e_end; a message in one
    // buffer is thereby compressed in a single pass, without zstd's internal input buffer.
    const bool last = pieces.AtEnd();
    ZSTD_inBuffer in{piece.data(), piece.size(), 0};
    size_t rc;
    do {
      const std::span<std::byte> space = output.Space();
      ZSTD_outBuffer o{space.data(), space.size(), 0};
      rc = ZSTD_compressStream2(cctx, &o, &in, last ? ZSTD_e_end : ZSTD_e_continue);
      (void)output.Commit(o.pos);  // no limit: never false
      if (ZSTD_isError(rc)) return ZstdError("compression failed", rc);
    } while (last ? rc != 0 : in.pos < in.size);
    if (last) break;
    piece = pieces.Next();
  }
  output.MoveTo(out);
  return OkStatus();
}

Status ZstdCompressorImpl::Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                                      BufferSlice& out) {
  ZSTD_DCtx* dctx = DecompressionContext().Begin(WindowLogMaxFor(limit));
  if (dctx == nullptr) {
    return Status(StatusCode::kInternal, "zstd: cannot set up the decompressor");
  }
  OutputChunks output(pool, OutputChunks::kChunkSize, limit);
  InputPieces pieces(input);
  ZSTD_inBuffer in{nullptr, 0, 0};
  // True after a frame was decoded and flushed in full. A message may hold several frames
  // (RFC 8878 3), skippable ones included; bytes that do not start a frame fail the magic
  // number check.
  bool frame_done = false;
  // zstd checks a frame's declared content size against what it decoded only when the whole
  // frame arrives in one piece; so that the outcome does not depend on how the message was cut,
  // each frame's header is kept (its first bytes) and the size checked here.
  std::byte header[kMaxFrameHeaderSize];
  size_t header_size = 0;
  uint64_t frame_output = 0;
  while (true) {
    if (in.pos == in.size) {
      const std::span<const std::byte> piece = pieces.Next();
      in = ZSTD_inBuffer{piece.data(), piece.size(), 0};
      if (piece.empty() && frame_done) break;
      const size_t n = std::min(sizeof(header) - header_size, piece.size());
      if (n > 0) std::memcpy(header + header_size, piece.data(), n);
      header_size += n;
    }
    const std::span<std::byte> space = output.Space();
    ZSTD_outBuffer o{space.data(), space.size(), 0};
    const size_t rc = ZSTD_decompressStream(dctx, &o, &in);
    if (ZSTD_isError(rc)) {
      if (ZSTD_getErrorCode(rc) == ZSTD_error_frameParameter_windowTooLarge) {
        return Status(StatusCode::kResourceExhausted,
                      "zstd: the frame's window is larger than the " +
                          std::to_string(size_t{1} << WindowLogMaxFor(limit)) +
                          " bytes allowed for a limit of " + std::to_string(limit) + " bytes");
      }
      return ZstdError("corrupt compressed data", rc);
    }
    if (!output.Commit(o.pos)) return output.LimitStatus();
    frame_output += o.pos;
    frame_done = rc == 0;
    if (frame_done) {
      const unsigned long long declared = ZSTD_getFrameContentSize(header, header_size);
      if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR &&
          declared != frame_output) {
        return Status(StatusCode::kInternal,
                      "zstd: corrupt compressed data (a frame's content differs from its "
                      "declared size)");
      }
      // The next frame starts where this one ended.
      header_size = std::min(sizeof(header), in.size - in.pos);
      if (header_size > 0) {
        std::memcpy(header, static_cast<const std::byte*>(in.src) + in.pos, header_size);
      }
      frame_output = 0;
    }
    // zstd stops with output space left only when it needs more input.
    if (!frame_done && o.pos < o.size && in.pos == in.size && pieces.AtEnd()) {
      return Status(StatusCode::kInternal, "zstd: compressed data ends before the end of a frame");
    }
  }
  output.MoveTo(out);
  return OkStatus();
}

}  // namespace

std::shared_ptr<Compressor> ZstdCompressor(int level) {
  RILL_CHECK_MSG(level >= ZSTD_minCLevel() && level <= ZSTD_maxCLevel(),
                 "zstd compression level out of range (ZSTD_minCLevel()..ZSTD_maxCLevel())");
  return std::make_shared<ZstdCompressorImpl>(level);
}

}  // namespace rill
