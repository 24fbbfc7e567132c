// CallStats and ConnectionStats: how a call or connection reports to the installed
// StatsHandlers (rill/stats.h).
//
// A call records its events here as they happen. Outside an HTTP/2 session step they are
// delivered at once; inside one (user code must not run there) they are queued, the Record
// function returns true, and the call arranges Flush() for when the step ends. Delivery keeps
// the order of recording.
//
// On a client, messages recorded before the request headers went out (a call waiting for its
// connection) are held back until they do, and dropped if the call ends without a stream.
//
// Nothing is allocated in steady state: the queue, the tag list and the copied strings keep
// their capacity across the calls a pooled object serves. A message's payload is a reference to
// its buffers; only a compressed one costs a decompression (into pooled buffers).
//
// Thread safety: reactor-confined.
#ifndef RILL_SRC_RPC_CALL_STATS_H_
#define RILL_SRC_RPC_CALL_STATS_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rill/mem/buffer_slice.h"
#include "rill/stats.h"
#include "rill/status.h"
#include "src/http2/session_depth.h"

namespace rill {
class BufferPool;
class Compressor;
}  // namespace rill

namespace rill::internal {

struct Message;

using StatsHandlers = std::vector<std::shared_ptr<StatsHandler>>;

class CallStats {
 public:
  CallStats() = default;
  CallStats(const CallStats&) = delete;
  CallStats& operator=(const CallStats&) = delete;

  // Starts observing a new call (dropping anything left of the previous one). With `handlers`
  // null or empty the object stays inactive and every event site skips it.
  void Start(const StatsHandlers* handlers, bool client, BufferPool& pool);
  [[nodiscard]] bool active() const noexcept { return handlers_ != nullptr; }
  [[nodiscard]] bool ended() const noexcept { return ended_; }

  // Each returns true when the event was queued inside a session step (the caller arranges a
  // Flush() after the step). Events after kEnd are ignored.
  // What the request says (copied; a later call replaces earlier values). With `borrow` the
  // strings are not copied: the caller keeps them unchanged until the call's kEnd was
  // delivered (a server call's own method and authority).
  void Describe(std::string_view method, std::string_view authority,
                std::chrono::nanoseconds timeout, bool borrow = false);
  // `peer` is copied, or with `borrow` kept as a view (the connection's address, which
  // outlives its calls).
  bool Begin(std::string_view peer, bool borrow = false);
  // Request headers (client out, server in) carry the request's fields; response headers only
  // metadata. `metadata` must stay valid until the event is delivered. A non-empty `peer`
  // replaces the one given to Begin (a client learns it when its stream opens).
  bool Headers(bool out, const Metadata* metadata, std::string_view peer = {});
  // An outgoing message as framed for the wire (5-byte prefix included), compressed with
  // `compressor` when its flag says so.
  bool OutMessage(const BufferSlice& framed, Compressor* compressor);
  // An incoming message (body without prefix) and the compressor of the call's encoding.
  bool InMessage(const Message& message, Compressor* compressor);
  // The client half-closed (client: queued after its last message; server: received).
  bool HalfClose();
  bool Trailers(bool out, const Status& status, const Metadata* metadata, bool trailers_only);
  bool End(const Status& status);

  // Delivers what is queued (outside a session step only). The events delivered together share
  // one timestamp (one clock read per delivery, not per event).
  void Flush();

  // Holds the events recorded in its scope back and delivers them together when it ends (a
  // call's response headers, message and trailers, say).
  class Batch {
   public:
    explicit Batch(CallStats& stats) : stats_(stats) { ++stats_.batch_depth_; }
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

   private:
    CallStats& stats_;
  };
  [[nodiscard]] bool has_queued() const noexcept { return queued_ != 0; }

 private:
  // An event as recorded: a small trivially copyable record of what varies per event. The
  // message bodies are kept apart (`payloads_`, referenced by index) and the two statuses a
  // call reports in members of their own, so recording is a few stores into a vector that
  // keeps its capacity, and clearing the queue runs no destructors. The CallEvent handlers see
  // (`event_`) is filled from the records at delivery.
  struct Record {
    CallEventType type = CallEventType::kBegin;
    bool compressed = false;
    bool trailers_only = false;
    uint32_t sequence = 0;
    uint32_t payload = 0;  // messages: index of the body in payloads_ (or held_payloads_)
    size_t wire_size = 0;
    size_t body_size = 0;
    const Metadata* metadata = nullptr;
    Compressor* compressor = nullptr;  // decompresses the body before delivery when set
  };
  // Queues `record`, or on a client before its headers went out holds it back (messages and
  // the half-close). Returns what the Record functions return. Inlined into each recorder.
  [[gnu::always_inline]] bool Queue(const Record& record) {
    if (hold_messages_ && (record.type == CallEventType::kOutMessage ||
                           record.type == CallEventType::kHalfClose)) [[unlikely]] {
      Hold(record);
      return false;
    }
    Push(record);
    return Commit();
  }
  void Push(const Record& record) {
    if (queued_ == queue_.size()) [[unlikely]] {
      GrowQueue();
    }
    queue_[queued_++] = record;
  }
  [[gnu::noinline]] void Hold(const Record& record);
  [[gnu::noinline]] void GrowQueue();  // out of the recording path
  [[gnu::noinline]] void GrowPayloads();
  // The slot for a message's body, in the queue's or the held messages' list (`record.payload`
  // set to its index); the caller fills it and then calls Queue(record).
  BufferSlice& AddBody(Record& record);
  // After recording: delivers at once, or (in a Batch) when it ends; inside a session step
  // returns true (the caller arranges a Flush() after the step).
  bool Commit() {
    if (batch_depth_ > 0) {
      // Whether a batch is inside a session step is asked once until the next flush.
      if (batch_inside_ < 0) batch_inside_ = InsideHttp2Session() ? 1 : 0;
      return batch_inside_ != 0;
    }
    return CommitOutsideBatch();
  }
  // Not in a Batch: true inside a session step, else delivers now. Out of the recording path.
  [[gnu::noinline]] bool CommitOutsideBatch();
  // Queues the events held back on a client until its request headers went out.
  [[gnu::noinline]] void ReleaseHeld();
  // Replaces a compressed body with its decompression (null when that failed).
  const BufferSlice* Decompress(const Record& record, BufferSlice& payload);
  // Asks each handler for its tag (delivering kBegin).
  void TagCall();

  [[nodiscard]] bool Wants(CallEventType type) const noexcept {
    return (wanted_ & CallEventBit(type)) != 0;
  }

  const StatsHandlers* handlers_ = nullptr;
  BufferPool* pool_ = nullptr;
  CallEventMask wanted_ = 0;          // what any handler reads (kBegin and kEnd always)
  std::vector<CallEventMask> masks_;  // each handler's
  bool client_ = false;
  bool began_ = false;
  bool ended_ = false;
  bool hold_messages_ = false;  // client, until the request headers are out
  int batch_depth_ = 0;
  // In a Batch: whether its events were recorded inside a session step (-1: not asked yet;
  // asked once until the next flush).
  int8_t batch_inside_ = -1;
  std::vector<void*> tags_;  // one per handler (null until kBegin is delivered)
  // The queue: the first queued_ records. The slots are kept (assigned, never constructed per
  // event); they grow outside the recording path.
  std::vector<Record> queue_;
  size_t queued_ = 0;
  // The bodies of the queued messages: the first payload_count_ slots. A slot is freed when its
  // event was delivered and kept for the next message (no construction per message).
  std::vector<BufferSlice> payloads_;
  size_t payload_count_ = 0;
  std::vector<Record> held_;
  std::vector<BufferSlice> held_payloads_;
  Status trailers_status_;  // kOutTrailers, kInTrailers
  Status end_status_;       // kEnd
  // What events report; views of the copies below, or of the caller's strings (borrowed).
  std::string_view method_;
  std::string_view authority_;
  std::string_view peer_;
  std::string method_copy_;
  std::string authority_copy_;
  std::string peer_copy_;
  std::chrono::nanoseconds timeout_{-1};
  CallEvent::Clock::time_point begin_time_;  // set when kBegin is delivered
  // The event handlers see, kept between flushes with every per-event field at its default
  // (each delivery puts back what it set), so a flush builds no event.
  CallEvent event_;
  uint32_t messages_sent_ = 0;
  uint32_t messages_received_ = 0;
  uint64_t sent_bytes_ = 0;
  uint64_t received_bytes_ = 0;
};

// A connection's kBegin and kEnd. Both run outside session steps (the transport's start and its
// done notification).
class ConnectionStats {
 public:
  void Begin(const StatsHandlers* handlers, bool client, std::string_view peer);
  void End();

 private:
  const StatsHandlers* handlers_ = nullptr;
  bool client_ = false;
  std::string peer_;
  std::vector<void*> tags_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_CALL_STATS_H_
