// InboundQueue: the messages a stream received and its reader has not taken yet.
//
// DATA payload is cut into messages by a MessageDeframer; whole messages wait in a FIFO. Two
// flow-control policies:
//   credit on receipt — for calls that take exactly one message (its size is bounded by the
//     receive limit, checked from its prefix): the stream window is credited as bytes arrive;
//   credit on pop — for streams: bytes are credited when the reader takes the message, so a
//     reader that falls behind holds the sender back instead of making this side buffer.
//     Except when nothing is queued and the rest of the message being assembled does not fit in
//     what the peer may still send: then the bytes that arrived are credited at once (and so
//     are later ones, for as long as that holds). Otherwise a message larger than the window
//     could never arrive, nor could one that fits it while credit from earlier messages is
//     still unannounced (nghttp2 announces credit once it reaches half the window), and with
//     no message left to take the reader would never credit more. The window itself is never
//     changed here: shrinking it back after a grant leaves nghttp2 owing the difference, which
//     swallows the next grant (and the window's growth by the BDP estimator).
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
  void Reset(size_t max_message_size, bool credit_on_receipt);

  // Appends DATA payload and cuts whole messages. A framing error (oversized or bad flag)
  // clears the queue and is returned.
  Status Push(Buffer payload, Http2Session& session, int32_t stream_id, BufferPool& pool);

  [[nodiscard]] bool empty() const noexcept { return head_ == messages_.size(); }
  [[nodiscard]] size_t count() const noexcept { return messages_.size() - head_; }
  // Bytes of a message whose prefix or body is still incomplete are buffered.
  [[nodiscard]] bool HasPartial() const noexcept { return deframer_.HasPartial(); }

  // The i-th message waiting (0: the oldest), without taking it.
  [[nodiscard]] const Message& Peek(size_t i) const noexcept { return messages_[head_ + i]; }
  // Takes the oldest message (the queue must not be empty). `session` receives the window
  // credit; null when the stream is gone (or the policy credits on receipt).
  Message Pop(Http2Session* session, int32_t stream_id);
  // Frees everything queued.
  void Clear();

 private:
  // When the peer's allowance is too small for the rest of the message being assembled (and,
  // crediting on pop, the queue is empty): credits what arrived, then grows the stream window by
  // what is still lacking.
  void LetPartialArrive(Http2Session& session, int32_t stream_id);

  MessageDeframer deframer_;
  std::vector<Message> messages_;  // FIFO from head_; capacity is kept across calls
  size_t head_ = 0;
  bool credit_on_receipt_ = true;
  // Credit on pop, as offsets into the stream's DATA payload (prefixes included): bytes
  // received, bytes credited to the session, and bytes of the messages the reader took.
  // credited_ <= received_, and bytes are credited in order.
  uint64_t received_ = 0;
  uint64_t credited_ = 0;
  uint64_t taken_ = 0;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_INBOUND_QUEUE_H_
