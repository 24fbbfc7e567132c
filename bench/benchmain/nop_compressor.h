// benchmain's -compression=nop: grpc-go's legacy copy-only compressor (`nopCompressor` in
// benchmark/benchmain), registered as encoding "nop" on both sides. It measures what the
// compression path costs apart from the compression itself: each message is copied once into
// pooled chunks when compressed and once more when decompressed.
//
//   builder.RegisterCompressor(std::make_shared<rill::bench::NopCompressor>());
//   channel_options.compressors.push_back(std::make_shared<rill::bench::NopCompressor>());
//   context.set_compression("nop");
//
// rill sends a message uncompressed when compressing did not make it smaller, so with "nop" the
// copy happens on the sending side and the message travels with the compressed flag off.
//
// Thread safety: thread-safe (stateless).
#ifndef RILL_BENCH_BENCHMAIN_NOP_COMPRESSOR_H_
#define RILL_BENCH_BENCHMAIN_NOP_COMPRESSOR_H_

#include <memory>
#include <string_view>

#include "rill/compression.h"

namespace rill::bench {

class NopCompressor final : public rill::Compressor {
 public:
  [[nodiscard]] std::string_view name() const override { return "nop"; }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override;
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override;
};

// The compressor benchmain uses for encoding `name` (a built-in, or "nop"); null when none.
std::shared_ptr<rill::Compressor> BenchCompressor(std::string_view name);

}  // namespace rill::bench

#endif  // RILL_BENCH_BENCHMAIN_NOP_COMPRESSOR_H_
