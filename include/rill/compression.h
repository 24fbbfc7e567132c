// Message compression: the Compressor interface and rill's built-in compressors.
//
// Compressors are registered per server (ServerBuilder::RegisterCompressor) and per channel
// (ChannelOptions::compressors); there is no process-wide registry. Both sides start with the
// built-ins (gzip, deflate, zstd; identity is implicit).
//
//   rill::ClientContext ctx;
//   ctx.set_compression("gzip");          // this call's requests are gzip-compressed
//
// Compression writes into pooled chunks; decompression reads through a bound of limit + 1 bytes
// into pooled chunks, so a compression bomb is stopped after at most limit + one chunk of
// memory, and the size a compressed payload declares is never trusted.
//
// Thread safety: Compressor implementations are thread-safe; the built-ins keep their zlib and
// zstd contexts per thread and reuse them (reset, not reallocated) message after message.
#ifndef RILL_COMPRESSION_H_
#define RILL_COMPRESSION_H_

#include <cstddef>
#include <memory>
#include <string_view>

#include "rill/mem/buffer_slice.h"
#include "rill/status.h"

namespace rill {

class BufferPool;

class Compressor {
 public:
  virtual ~Compressor() = default;

  // The grpc-encoding name ("gzip", "deflate", "zstd", ...).
  [[nodiscard]] virtual std::string_view name() const = 0;

  // Appends the compressed form of `input` to `out` in pooled chunks. INTERNAL on failure
  // (nothing is appended then).
  virtual Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) = 0;

  // Appends the decompressed form of `input` to `out` in pooled chunks, producing at most
  // `limit` bytes: RESOURCE_EXHAUSTED if the data expands beyond it, INTERNAL for corrupt or
  // truncated data. On error nothing is appended.
  virtual Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                            BufferSlice& out) = 0;
};

// The built-ins. gzip is RFC 1952; deflate is the zlib format (RFC 1950), as gRPC and HTTP use
// the name; zstd is RFC 8878. Levels: -1 (zlib's default, 6) or 0..9 for gzip and deflate;
// ZSTD_minCLevel()..ZSTD_maxCLevel() for zstd (0 is zstd's default); any other level aborts.
// Decompression accepts what each format allows: a gzip stream of several members, a zstd
// message of several frames. zstd keeps a frame's history window outside the pool: windows up to
// max(8 MiB, limit rounded up to a power of two), at most 128 MiB, are accepted; a frame that
// declares a larger one gets RESOURCE_EXHAUSTED.
std::shared_ptr<Compressor> GzipCompressor(int level = -1);
std::shared_ptr<Compressor> DeflateCompressor(int level = -1);
std::shared_ptr<Compressor> ZstdCompressor(int level = 3);

}  // namespace rill

#endif  // RILL_COMPRESSION_H_
