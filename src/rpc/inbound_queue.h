// InboundQueue: the messages a stream received and its reader has not taken yet.
//
// DATA payload is cut into messages by a MessageDeframer; whole messages wait in a FIFO. Two
// flow-control policies:
//   credit on receipt — for calls that take exactly one message (its size is bounded by the
//     receive limit, checked from its prefix): the stream window is credited as bytes arrive;
//   credit on pop — for streams: bytes are credited when the reader takes the message, so a
//     reader that falls behind holds the sender back instead of making this side buffer. A
//     message larger than the window gets the difference granted while it arrives (otherwise it
//     could never arrive), and the window is restored once it was taken.
//
// A message queued behind others whose views pin more than twice its size (pieces of large
// read blocks) is compacted into a block of its own, so a backlog costs about its payload.
//
// Thread safety: reactor-confined.
#ifndef RILL_SRC_RPC_INBOUND_QUEUE_H_
#define RILL_SRC_RPC_INBOUND_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/http2/http2_session.h"
#include "src/rpc/deframer.h"

namespace rill::internal {

class InboundQueue {
 public:
  void Reset(size_t max_message_size, uint32_t stream_window, bool credit_on_receipt);

  // Appends DATA payload and cuts whole messages. A framing error (oversized or bad flag)
  // clears the queue and is returned.
  Status Push(Buffer payload, Http2Session& session, int32_t stream_id, BufferPool& pool);

  [[nodiscard]] bool empty() const noexcept { return head_ == messages_.size(); }
  [[nodiscard]] size_t count() const noexcept { return messages_.size() - head_; }
  // Bytes of a message whose prefix or body is still incomplete are buffered.
  [[nodiscard]] bool HasPartial() const noexcept { return deframer_.HasPartial(); }

  // Takes the oldest message (the queue must not be empty). `session` receives the window
  // credit; null when the stream is gone (or the policy credits on receipt).
  Message Pop(Http2Session* session, int32_t stream_id);
  // Frees everything queued.
  void Clear();

 private:
  MessageDeframer deframer_;
  std::vector<Message> messages_;  // FIFO from head_; capacity is kept across calls
  size_t head_ = 0;
  size_t queued_bytes_ = 0;        // wire bytes (prefix included) of the queued messages
  uint32_t window_ = 65535;
  bool window_raised_ = false;
  bool credit_on_receipt_ = true;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_INBOUND_QUEUE_H_
