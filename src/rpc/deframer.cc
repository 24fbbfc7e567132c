#include "src/rpc/deframer.h"

#include <string>

#include "src/rpc/codec.h"

namespace rill::internal {
namespace {

// Compaction only pays for itself once a partial message holds at least this much.
constexpr size_t kCompactionFloor = 16 * 1024;

}  // namespace

MessageDeframer::Result MessageDeframer::Next(Message& out, Status& error, BufferPool& pool) {
  if (!have_prefix_) {
    if (pending_.size() < kMessagePrefixSize) return Result::kNeedMore;
    std::byte prefix[kMessagePrefixSize];
    pending_.CopyTo(prefix);
    const auto flag = static_cast<uint8_t>(prefix[0]);
    const uint32_t size = (static_cast<uint32_t>(prefix[1]) << 24) |
                          (static_cast<uint32_t>(prefix[2]) << 16) |
                          (static_cast<uint32_t>(prefix[3]) << 8) | static_cast<uint32_t>(prefix[4]);
    if (flag > 1) {
      error = Status(StatusCode::kInternal,
                     "invalid message flag " + std::to_string(flag) + " (must be 0 or 1)");
      return Result::kError;
    }
    if (size > max_message_size_) {
      error = Status(StatusCode::kResourceExhausted,
                     "received message larger than max (" + std::to_string(size) + " vs. " +
                         std::to_string(max_message_size_) + ")");
      return Result::kError;
    }
    pending_.TakeFront(kMessagePrefixSize).Free();
    have_prefix_ = true;
    compressed_ = flag == 1;
    body_size_ = size;
  }
  if (pending_.size() < body_size_) {
    // Only blocks the partial message alone holds count: copying views of a block that stays
    // alive anyway (the read block being parsed; on an in-process connection, the sender's
    // message buffer until its last frame is delivered) frees nothing, and doing it for every
    // chunk of a large message would copy it over and over.
    // Both walks visit every view, so they run when the views have grown by half since the
    // last look, not for every chunk: a 1 MiB message read a frame at a time is ~70 views,
    // and looking at each arrival walked them ~2,500 times per message. A compaction the
    // views call for therefore waits until they have grown by at most half in number.
    if (pending_.size() >= kCompactionFloor && pending_.buffer_count() >= next_compaction_check_) {
      if (pending_.PinnedBytes() > 2 * pending_.size() &&
          pending_.ReclaimableBytes() > 2 * pending_.size()) {
        pending_.Compact(pool);
      }
      next_compaction_check_ = pending_.buffer_count() + pending_.buffer_count() / 2 + 1;
    }
    return Result::kNeedMore;
  }
  out.body = pending_.TakeFront(body_size_);
  out.compressed = compressed_;
  have_prefix_ = false;
  body_size_ = 0;
  next_compaction_check_ = 0;
  return Result::kMessage;
}

}  // namespace rill::internal
