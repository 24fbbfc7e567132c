// ServerTransport: one accepted connection on the server — its HTTP/2 connection, and the calls
// running on its streams.
//
// Call objects are recycled per connection (a free list), so a connection that serves call after
// call stops allocating. A connection with no call for about a second gives them back (a call
// object is ~4 KiB, more than the rest of an idle connection's own state), so idle connections
// hold none. The server owns the transport (docs/ownership.md) and destroys it once
// its connection is done and no call (including a handler coroutine still running) refers to
// it.
//
// Thread safety: reactor-confined.
#ifndef RILL_SRC_RPC_SERVER_TRANSPORT_H_
#define RILL_SRC_RPC_SERVER_TRANSPORT_H_

#include <asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <vector>

#include "src/base/channelz.h"
#include "src/http2/http2_session.h"
#include "src/rpc/call_stats.h"
#include "src/transport/http2_connection.h"

namespace rill::internal {

class ServerCall;
class ServerImpl;

class ServerTransport final : public Http2Handler, public Http2Connection::Owner {
 public:
  // `tls`: the context of a TLS port (null: plaintext).
  ServerTransport(ServerImpl& server, Http2Connection::Socket socket,
                  std::shared_ptr<TlsContext> tls);
  // In-process: over one end of a pipe whose other end a channel's connection holds.
  ServerTransport(ServerImpl& server, PipeEnd pipe, asio::io_context& io_context);
  ~ServerTransport() override;
  ServerTransport(const ServerTransport&) = delete;
  ServerTransport& operator=(const ServerTransport&) = delete;

  void Start();
  // Graceful shutdown: GOAWAY, no new streams; the connection closes when its calls are done.
  void BeginShutdown();
  // Cancels every call and closes the connection.
  void ForceClose();

  [[nodiscard]] ServerImpl& server() noexcept { return server_; }
  [[nodiscard]] Http2Connection& connection() noexcept { return connection_; }
  [[nodiscard]] Http2Session& session() noexcept { return connection_.session(); }
  [[nodiscard]] channelz::SocketNode& channelz() noexcept { return channelz_; }

  // A call finished with its stream and its handler: back to the free list.
  void ReleaseCall(ServerCall* call);
  // Queues `call` to RunDeferred() once the session's current step ends (in order).
  void Defer(ServerCall* call);
  // A coroutine or streaming handler started / returned (the admission limits count them).
  void HandlerStarted();
  void HandlerFinished();
  // An admitted call left the admission count without a handler having started (its handler
  // is synchronous, or the call ended first).
  void AdmissionEnded() noexcept;

  // Asynchronous operations of calls (timers) that must finish before the transport goes.
  void AddPendingOp() { ++pending_ops_; }
  void RemovePendingOp() {
    --pending_ops_;
    MaybeDestroy();
  }

  // Http2Handler.
  void OnStreamBegin(int32_t stream_id) override;
  void OnHeader(int32_t stream_id, void* stream, HeadersKind kind, std::string_view name,
                std::string_view value) override;
  void OnHeadersEnd(int32_t stream_id, void* stream, HeadersKind kind, bool end_stream) override;
  void OnData(int32_t stream_id, void* stream, Buffer payload) override;
  void OnRemoteEnd(int32_t stream_id, void* stream) override;
  void OnStreamClose(int32_t stream_id, void* stream, uint32_t error_code) override;
  void OnDataFramed(int32_t stream_id, void* stream, size_t bytes) override;
  void OnPingAck(uint64_t payload) override;
  bool IsEarlyReset(int32_t stream_id, void* stream) override;

  // Http2Connection::Owner.
  void OnConnectionDone(const Status& reason) override;
  void OnSessionStepDone() override;

 private:
  void MaybeDestroy();
  // Arms trim_timer_ (when not armed): a second later, call objects of a connection that has
  // stayed without calls are destroyed.
  void ArmCallTrim();
  void OnCallTrimTimer();

  ServerCall* deferred_head_ = nullptr;
  ServerCall* deferred_tail_ = nullptr;

  ServerImpl& server_;
  channelz::SocketNode channelz_;  // before connection_, which reports to it
  Http2Connection connection_;
  std::vector<std::unique_ptr<ServerCall>> calls_;  // every call object this transport made
  std::vector<ServerCall*> free_calls_;
  size_t active_calls_ = 0;
  uint64_t calls_begun_ = 0;         // streams that got a call object, ever
  uint64_t calls_begun_at_arm_ = 0;  // calls_begun_ when trim_timer_ was armed
  bool trim_armed_ = false;
  asio::steady_timer trim_timer_;
  uint32_t running_handlers_ = 0;
  // Calls admitted whose handler has not started yet: their handlers start after the session
  // step, so admission counts them too (else one read of many streams would pass the cap).
  uint32_t admitted_ = 0;
  // Graceful shutdown after max_connection_idle / max_connection_age.
  void ArmIdleTimer();
  void OnLifetimeTimer();
  // Graceful shutdown, second step: GOAWAY with the last stream id processed.
  void SendFinalGoaway();
  asio::steady_timer lifetime_timer_;
  asio::steady_timer notice_timer_;  // waits for the ACK of the PING after the notice
  std::chrono::steady_clock::time_point idle_since_;
  std::chrono::steady_clock::time_point age_limit_ = std::chrono::steady_clock::time_point::max();
  bool age_shutdown_ = false;
  bool shutdown_notice_sent_ = false;
  bool final_goaway_sent_ = false;
  int pending_ops_ = 0;
  bool connection_done_ = false;
  ConnectionStats stats_;
  bool destroying_ = false;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_SERVER_TRANSPORT_H_
