#include "src/rpc/inbound_queue.h"

#include <algorithm>

#include "src/rpc/codec.h"

namespace rill::internal {

void InboundQueue::Reset(size_t max_message_size, uint32_t stream_window,
                         bool credit_on_receipt) {
  Clear();
  deframer_.Reset(max_message_size);
  window_ = stream_window;
  window_raised_ = false;
  credit_on_receipt_ = credit_on_receipt;
}

Status InboundQueue::Push(Buffer payload, Http2Session& session, int32_t stream_id,
                          BufferPool& pool) {
  if (credit_on_receipt_) session.Consume(stream_id, payload.size());
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
        queued_bytes_ += message.body.size() + kMessagePrefixSize;
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
  const size_t partial = deframer_.partial_message_size();
  if (!credit_on_receipt_ && !window_raised_ &&
      partial + kMessagePrefixSize + queued_bytes_ > window_) {
    const size_t window = partial + kMessagePrefixSize + queued_bytes_ + window_;
    session.SetStreamWindow(stream_id,
                            static_cast<int32_t>(std::min<size_t>(window, 0x7fffffff)));
    window_raised_ = true;
  }
  return Status();
}

Message InboundQueue::Pop(Http2Session* session, int32_t stream_id) {
  RILL_DCHECK(!empty());
  Message message = std::move(messages_[head_++]);
  if (head_ == messages_.size()) {
    messages_.clear();
    head_ = 0;
  }
  const size_t wire_size = message.body.size() + kMessagePrefixSize;
  queued_bytes_ -= wire_size;
  if (!credit_on_receipt_ && session != nullptr) {
    session->Consume(stream_id, wire_size);
    if (window_raised_ && deframer_.partial_message_size() == 0) {
      session->SetStreamWindow(stream_id, static_cast<int32_t>(window_));
      window_raised_ = false;
    }
  }
  return message;
}

void InboundQueue::Clear() {
  for (size_t i = head_; i < messages_.size(); ++i) messages_[i].body.Free();
  messages_.clear();
  head_ = 0;
  queued_bytes_ = 0;
  deframer_.Clear();
}

}  // namespace rill::internal
