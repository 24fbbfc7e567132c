// InMemoryPipe: a duplex byte stream between two connections of one process, carried as
// references to pooled buffers instead of through a socket.
//
// It replaces the socket under an in-process Http2Connection pair (the client and the server
// of Server::InProcessChannel()): HTTP/2 framing is kept, only the kernel is gone. What one end
// writes is a list of Buffer views (frame headers gathered in a pooled staging block, payloads
// as views of the sender's own message buffers); the other end reads the same views. No byte is
// copied between the ends.
//
//   auto [client, server] = InMemoryPipe::Create();
//   client.Write(pieces);                         // moves the views into the server's queue
//   server.AsyncWaitReadable(io, handler);        // handler(ec) posted to `io` once readable
//   server.Read(out, max_bytes);                  // the views, in order
//
// Semantics follow a stream socket where the two differ from a queue:
// - each direction holds at most kCapacity bytes; CanWrite() is false beyond that, and
//   AsyncWaitWritable completes once the reader took enough;
// - ShutdownWrite() (the socket's SHUT_WR) makes the peer read end-of-stream after the bytes
//   queued before it; Close() does that too, and drops what was queued for this end and
//   whatever the peer writes afterwards (the peer never fails a write: it reads the end of the
//   stream instead, as from a lingering socket);
// - Close() completes this end's pending waits with asio::error::operation_aborted.
//
// Completions: a wait's handler runs on the io_context given with it, from a fresh handler
// (never inside Write(), Read() or Close()), once; at most one read wait and one write wait may
// be pending per end. The io_context must outlive the wait.
//
// Thread safety: thread-safe. Each end is used by one connection on one reactor; the two ends
// may live on different reactors (a mutex guards the shared queues).
#ifndef RILL_SRC_TRANSPORT_IN_MEMORY_PIPE_H_
#define RILL_SRC_TRANSPORT_IN_MEMORY_PIPE_H_

#include <asio/error.hpp>
#include <asio/io_context.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "rill/mem/buffer.h"

namespace rill::internal {

namespace pipe_detail {
struct State;
}  // namespace pipe_detail

class PipeEnd {
 public:
  using Handler = std::function<void(const asio::error_code&)>;

  enum class ReadResult : uint8_t { kData, kEmpty, kEnd };

  PipeEnd() = default;
  ~PipeEnd();
  PipeEnd(PipeEnd&&) noexcept;
  PipeEnd& operator=(PipeEnd&&) noexcept;
  PipeEnd(const PipeEnd&) = delete;
  PipeEnd& operator=(const PipeEnd&) = delete;

  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

  // Appends the queued views to `out` (in order) until at least `max_bytes` were taken or the
  // queue is empty. kEnd once the queue is empty and the peer shut down its writing side.
  ReadResult Read(std::vector<Buffer>& out, size_t max_bytes);
  // True when Write() may be called: the peer's queue is below kCapacity (or the peer closed,
  // and writes are dropped).
  [[nodiscard]] bool CanWrite() const;
  // Moves every view in `pieces` to the peer (or drops them once the peer closed); `pieces` is
  // left empty. Writing after ShutdownWrite() or Close() is a bug.
  void Write(std::vector<Buffer>& pieces);
  void AsyncWaitReadable(asio::io_context& io, Handler handler);
  void AsyncWaitWritable(asio::io_context& io, Handler handler);
  // No more writes from this end: the peer reads end-of-stream after what is queued.
  void ShutdownWrite();
  // Shuts down writing, drops this end's input, completes pending waits as aborted. Idempotent.
  void Close();

 private:
  friend class InMemoryPipe;
  PipeEnd(std::shared_ptr<pipe_detail::State> state, int side)
      : state_(std::move(state)), side_(side) {}

  std::shared_ptr<pipe_detail::State> state_;
  int side_ = 0;
};

class InMemoryPipe {
 public:
  // Bytes one direction may hold before the writer waits (about what a loopback socket holds).
  static constexpr size_t kCapacity = 1024 * 1024;

  // The two connected ends.
  static std::pair<PipeEnd, PipeEnd> Create();
};

}  // namespace rill::internal

#endif  // RILL_SRC_TRANSPORT_IN_MEMORY_PIPE_H_
