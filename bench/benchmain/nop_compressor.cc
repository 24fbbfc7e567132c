#include "bench/benchmain/nop_compressor.h"

#include <span>
#include <string>

#include "rill/channel.h"
#include "rill/mem/buffer.h"

namespace rill::bench {
namespace {

void AppendCopy(const BufferSlice& input, BufferPool& pool, BufferSlice& out) {
  if (input.empty()) return;
  Buffer copy = Buffer::Allocate(input.size(), pool);
  (void)input.CopyTo(std::span<std::byte>(copy.mutable_data(), input.size()));
  out.Append(std::move(copy));
}

}  // namespace

rill::Status NopCompressor::Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) {
  AppendCopy(input, pool, out);
  return rill::Status();
}

rill::Status NopCompressor::Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                                       BufferSlice& out) {
  if (input.size() > limit) {
    return rill::Status(
        rill::StatusCode::kResourceExhausted,
        "message of " + std::to_string(input.size()) + " bytes exceeds " + std::to_string(limit));
  }
  AppendCopy(input, pool, out);
  return rill::Status();
}

std::shared_ptr<rill::Compressor> BenchCompressor(std::string_view name) {
  if (name == "nop") return std::make_shared<NopCompressor>();
  for (std::shared_ptr<rill::Compressor>& compressor : rill::DefaultCompressors()) {
    if (compressor->name() == name) return std::move(compressor);
  }
  return nullptr;
}

}  // namespace rill::bench
