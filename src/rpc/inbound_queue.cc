#include "src/rpc/inbound_queue.h"

#include <cstddef>

#include "src/rpc/codec.h"

namespace rill::internal {
namespace {

// Taken slots at the front of the FIFO below which Pop() does not bother to drop them.
constexpr size_t kMinTakenToCompact = 64;

}  // namespace

void InboundQueue::Reset(size_t max_message_size, bool credit_on_receipt) {
  Clear();
  deframer_.Reset(max_message_size);
  credit_on_receipt_ = credit_on_receipt;
  received_ = credited_ = taken_ = 0;
}

Status InboundQueue::Push(Buffer payload, Http2Session& session, int32_t stream_id,
                          BufferPool& pool) {
  if (credit_on_receipt_) session.Consume(stream_id, payload.size());
  received_ += payload.size();
  deframer_.Push(std::move(payload));
  for (;;) {
    Message message;
    Status error;
    switch (deframer_.Next(message, error, pool)) {
      case MessageDeframer::Result::kMessage:
        // A message that waits behind others must not keep whole read blocks alive for a few
        // bytes of them: past twice its size in pinned memory, it moves into its own block.
        if (!empty() && message.body.PinnedBytes() > 2 * message.body.size()) {
          message.body.Compact(pool);
        }
        messages_.push_back(std::move(message));
        continue;
      case MessageDeframer::Result::kError:
        Clear();
        return error;
      case MessageDeframer::Result::kNeedMore:
        break;
    }
    break;
  }
  LetPartialArrive(session, stream_id);
  return Status();
}

Message InboundQueue::Pop(Http2Session* session, int32_t stream_id) {
  RILL_DCHECK(!empty());
  Message message = std::move(messages_[head_++]);
  if (head_ == messages_.size()) {
    messages_.clear();
    head_ = 0;
  } else if (head_ >= kMinTakenToCompact && head_ >= messages_.size() - head_) {
    // A reader that keeps up without ever emptying the queue (a sender that never pauses) must
    // not grow the vector by one slot per message for the life of the stream: once the taken
    // slots outnumber the waiting messages, drop them. Each waiting message moves at most once
    // per taken one, so this is O(1) amortized.
    messages_.erase(messages_.begin(), messages_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  taken_ += message.body.size() + kMessagePrefixSize;
  if (!credit_on_receipt_ && session != nullptr) {
    if (taken_ > credited_) {  // some of it may have been credited as it arrived
      session->Consume(stream_id, static_cast<size_t>(taken_ - credited_));
      credited_ = taken_;
    }
    LetPartialArrive(*session, stream_id);
  }
  return message;
}

void InboundQueue::LetPartialArrive(Http2Session& session, int32_t stream_id) {
  // A stream's reader credits more at its next Pop() while a message is queued, and checks again.
  if (!credit_on_receipt_ && !empty()) return;
  const size_t body = deframer_.partial_message_size();
  const size_t buffered = deframer_.buffered();
  // Bytes still to come before the message being assembled is whole (its prefix included while
  // that is incomplete; a prefix with no body yields its empty message at once).
  const size_t missing = body > 0       ? body - buffered
                         : buffered > 0 ? kMessagePrefixSize - buffered
                                        : 0;
  if (missing == 0) return;
  size_t allowance = session.StreamSendAllowance(stream_id);
  if (missing <= allowance) return;
  if (!credit_on_receipt_ && credited_ != received_) {
    // Everything uncredited belongs to that message (the reader took all before it).
    session.Consume(stream_id, static_cast<size_t>(received_ - credited_));
    credited_ = received_;
    allowance = session.StreamSendAllowance(stream_id);
    if (missing <= allowance) return;
  }
  // The rest of a message the deframer accepted (its size is within the limit) will be buffered
  // whatever the window: announce room for all of it now rather than one window at a time, each
  // costing the peer a wait for our WINDOW_UPDATE. Nothing is buffered beyond that message.
  session.GrowStreamWindow(stream_id, missing - allowance);
}

void InboundQueue::Clear() {
  for (size_t i = head_; i < messages_.size(); ++i) messages_[i].body.Free();
  messages_.clear();
  head_ = 0;
  deframer_.Clear();
}

}  // namespace rill::internal
