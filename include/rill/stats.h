// rill::StatsHandler: observing calls and connections as they happen, on the server and on the
// client, without turning buffer pooling off.
//
//   class Sizes final : public rill::StatsHandler {
//    public:
//     void HandleCall(void* tag, const rill::CallEvent& e) override {
//       if (e.type == rill::CallEventType::kInMessage) received_ += e.wire_size;
//     }
//    private:
//     std::atomic<uint64_t> received_{0};
//   };
//   builder.AddStatsHandler(std::make_shared<Sizes>());          // a server
//   options.stats_handlers.push_back(std::make_shared<Sizes>());  // a channel
//
// Every call reports, in this order: kBegin, then headers, messages and trailers as they go out
// and come in, and kEnd last (exactly once, also for calls that failed, were cancelled, ran out
// of time or never got a stream). A message event carries the message's bytes as a read-only
// reference-counted view (`payload`): a handler that wants them after the event returns keeps
// `payload->Ref()` — no bytes are copied, and the buffers go back to their pool when the last
// holder lets go. (A compressed message is presented decompressed; that costs a decompression
// only while a handler is installed.)
//
// Messages are reported as they leave for the wire (queued on the stream) and as they arrive
// whole from it, not when the application writes or reads them.
//
// Where handlers run: on the reactor thread that runs the call (or connection), never inside
// the HTTP/2 session's callbacks (an event raised there is delivered when the session step
// ends), always inside an exception boundary: an exception a handler throws is logged and goes
// no further. Handlers are shared by every call of a server or channel, on several reactors at
// once: they must be thread-safe. They must not block.
//
// With no handler installed the cost is one null check per event site; events that no installed
// handler reads (call_events()) cost a bit test.
#ifndef RILL_STATS_H_
#define RILL_STATS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rill {

class BufferSlice;
class Metadata;
class Status;

enum class CallEventType : uint8_t {
  kBegin,        // the call started (client: on the reactor; server: its request headers came)
  kOutHeaders,   // headers sent (client: request headers; server: response headers)
  kInHeaders,    // headers received (server: request headers; client: response headers)
  kOutMessage,   // a message left for the wire
  kInMessage,    // a message arrived whole
  kHalfClose,    // the client's side of the stream ended (client: sent; server: received)
  kOutTrailers,  // server: the status sent (trailers, or a trailers-only response)
  kInTrailers,   // client: the status the server sent
  kEnd,          // the call is over; nothing else is reported for it (a server reports it with
                 // its trailers once the client's side has ended, else when the stream closes)
};

std::string_view CallEventTypeName(CallEventType type);

// A set of call event types, one bit each: what a handler reads (StatsHandler::call_events).
using CallEventMask = uint32_t;
constexpr CallEventMask CallEventBit(CallEventType type) {
  return CallEventMask{1} << static_cast<unsigned>(type);
}
constexpr CallEventMask kAllCallEvents = (CallEventMask{1} << 9) - 1;

// What TagCall sees: the call, before its first event.
struct CallInfo {
  bool client = false;
  std::string_view method;     // "/package.Service/Method"
  std::string_view authority;  // :authority
};

struct CallEvent {
  using Clock = std::chrono::steady_clock;

  CallEventType type = CallEventType::kBegin;
  bool client = false;
  // When the event was delivered: events raised together (in one HTTP/2 session step, or by
  // one response going out) share one reading of the clock.
  Clock::time_point time;

  // Every event: the call's method ("/package.Service/Method") and :authority.
  std::string_view method;
  std::string_view authority;
  // kBegin and the request headers (server kInHeaders, client kOutHeaders):
  // the peer's address ("ipv4:1.2.3.4:5", "ipv6:[::1]:5", "unix:/path"); empty on a client
  // call that has no connection yet.
  std::string_view peer;
  // The request's timeout as sent or received; negative: none.
  std::chrono::nanoseconds timeout{-1};

  // Headers and trailers: the application's metadata (not the reserved gRPC headers).
  const Metadata* metadata = nullptr;
  // kOutTrailers: no response headers were sent before (a trailers-only response).
  bool trailers_only = false;

  // Messages. `sequence` counts the messages of a direction from 0.
  uint32_t sequence = 0;
  bool compressed = false;
  size_t wire_size = 0;          // bytes on the wire, the 5-byte gRPC prefix included
  size_t compressed_size = 0;    // the body as sent (equals uncompressed_size when uncompressed)
  size_t uncompressed_size = 0;  // the serialized message
  // The serialized message (decompressed), valid during the event; `payload->Ref()` keeps it.
  // Null only when a compressed message could not be decompressed.
  const BufferSlice* payload = nullptr;

  // kOutTrailers, kInTrailers: the status in the trailers. kEnd: the call's final status.
  const Status* status = nullptr;

  // kEnd: when the call began, and what it moved (messages and their compressed body bytes).
  Clock::time_point begin_time;
  uint32_t messages_sent = 0;
  uint32_t messages_received = 0;
  uint64_t sent_compressed_bytes = 0;
  uint64_t received_compressed_bytes = 0;
};

enum class ConnectionEventType : uint8_t { kBegin, kEnd };

struct ConnectionInfo {
  bool client = false;
  std::string_view peer;
};

struct ConnectionEvent {
  ConnectionEventType type = ConnectionEventType::kBegin;
  bool client = false;
  std::chrono::steady_clock::time_point time;
  std::string_view peer;
};

// Several handlers may be installed; each sees every event, in the order they were added, with
// its own tag.
class StatsHandler {
 public:
  virtual ~StatsHandler() = default;

  // Called before a call's first event; what it returns comes back as `tag` with each event of
  // that call (the handler's per-call state: the handler owns it and may free it at kEnd).
  virtual void* TagCall(const CallInfo& info) {
    static_cast<void>(info);
    return nullptr;
  }
  virtual void HandleCall(void* tag, const CallEvent& event) = 0;

  // The call events this handler reads. kBegin and kEnd reach it always (they bracket its tag's
  // life); of the others, only these. Events no installed handler reads are not recorded at
  // all: a handler that counts calls costs a call nothing per message. Asked once per call.
  [[nodiscard]] virtual CallEventMask call_events() const { return kAllCallEvents; }

  // The same for connections: kBegin when the connection is established, kEnd when it is gone.
  virtual void* TagConnection(const ConnectionInfo& info) {
    static_cast<void>(info);
    return nullptr;
  }
  virtual void HandleConnection(void* tag, const ConnectionEvent& event) {
    static_cast<void>(tag);
    static_cast<void>(event);
  }
};

}  // namespace rill

#endif  // RILL_STATS_H_
