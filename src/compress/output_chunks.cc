#include "src/compress/output_chunks.h"

#include <string>
#include <utility>

namespace rill::internal {

Status OutputChunks::LimitStatus() const {
  return Status(
      StatusCode::kResourceExhausted,
      "message after decompression larger than the limit of " + std::to_string(limit_) + " bytes");
}

void OutputChunks::MoveTo(BufferSlice& out) {
  writer_.Flush();
  out.Append(std::move(chunks_));
}

}  // namespace rill::internal
