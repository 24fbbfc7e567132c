// MessageDeframer: cuts a stream's DATA payload into gRPC messages.
//
// DATA views are appended as they arrive; Next() returns each whole message as a BufferSlice of
// views (boundaries inside a read block are cut by splitting views, never by copying). The
// 5-byte prefix is judged before any of the body is buffered: a length over the receive limit
// fails with RESOURCE_EXHAUSTED, a flag byte other than 0 or 1 with INTERNAL.
//
// When the views held for an unfinished message pin more than twice the bytes they carry (many
// tiny pieces of big blocks), they are compacted into one pooled buffer. That is looked at
// whenever the views have grown by half since the last look, so the work stays linear in the
// number of views and a compaction comes at most that much later than it could have.
//
// Thread safety: reactor-confined.
#ifndef RILL_SRC_RPC_DEFRAMER_H_
#define RILL_SRC_RPC_DEFRAMER_H_

#include <cstddef>
#include <cstdint>

#include "rill/mem/buffer_slice.h"
#include "rill/status.h"

namespace rill::internal {

struct Message {
  BufferSlice body;
  bool compressed = false;
};

class MessageDeframer {
 public:
  enum class Result : uint8_t { kMessage, kNeedMore, kError };

  MessageDeframer() = default;

  void Reset(size_t max_message_size) {
    pending_.Free();
    max_message_size_ = max_message_size;
    have_prefix_ = false;
    body_size_ = 0;
    next_compaction_check_ = 0;
  }
  void Push(Buffer data) { pending_.Append(std::move(data)); }

  // Extracts the next whole message into `out`. On kError, `error` says why and the deframer
  // must not be used again until Reset().
  Result Next(Message& out, Status& error, BufferPool& pool);

  // The declared size of the message being assembled (0 when between messages).
  [[nodiscard]] size_t partial_message_size() const noexcept {
    return have_prefix_ ? body_size_ : 0;
  }
  // True when bytes of an unfinished prefix or message are buffered (a stream that ends now is
  // truncated).
  [[nodiscard]] bool HasPartial() const noexcept { return have_prefix_ || !pending_.empty(); }
  [[nodiscard]] size_t buffered() const noexcept { return pending_.size(); }
  void Clear() {
    pending_.Free();
    next_compaction_check_ = 0;
  }

 private:
  BufferSlice pending_;
  size_t max_message_size_ = 0;
  size_t body_size_ = 0;
  // The view count of pending_ at which compaction is next considered.
  size_t next_compaction_check_ = 0;
  bool compressed_ = false;
  bool have_prefix_ = false;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_DEFRAMER_H_
