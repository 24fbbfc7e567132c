#include "src/transport/in_memory_pipe.h"

#include <asio/post.hpp>
#include <deque>
#include <mutex>

namespace rill::internal {
namespace pipe_detail {

struct Waiter {
  asio::io_context* io = nullptr;
  PipeEnd::Handler handler;

  [[nodiscard]] bool pending() const noexcept { return io != nullptr; }
  // Posts the handler with `ec` and forgets it. Called with the state's mutex held: posting
  // never runs the handler inline.
  void Complete(const asio::error_code& ec) {
    if (io == nullptr) return;
    asio::io_context* target = std::exchange(io, nullptr);
    asio::post(*target, [handler = std::move(handler), ec] { handler(ec); });
    handler = nullptr;
  }
};

// One direction: bytes written by one end, read by the other.
struct Direction {
  std::deque<Buffer> queue;
  size_t bytes = 0;
  bool write_shut = false;  // the writer shut down: end-of-stream after the queue
  bool read_closed = false;  // the reader closed: writes are dropped
  Waiter reader;             // the reading end waits for data or end-of-stream
  Waiter writer;             // the writing end waits for room
};

struct State {
  std::mutex mu;
  Direction to[2];  // to[i]: the bytes end i reads
};

}  // namespace pipe_detail

using pipe_detail::Direction;

PipeEnd::~PipeEnd() { Close(); }
PipeEnd::PipeEnd(PipeEnd&&) noexcept = default;
PipeEnd& PipeEnd::operator=(PipeEnd&& other) noexcept {
  if (this != &other) {
    Close();
    state_ = std::move(other.state_);
    side_ = other.side_;
  }
  return *this;
}

PipeEnd::ReadResult PipeEnd::Read(std::vector<Buffer>& out, size_t max_bytes) {
  std::lock_guard lock(state_->mu);
  Direction& in = state_->to[side_];
  if (in.queue.empty()) return in.write_shut ? ReadResult::kEnd : ReadResult::kEmpty;
  size_t taken = 0;
  while (!in.queue.empty() && taken < max_bytes) {
    taken += in.queue.front().size();
    out.push_back(std::move(in.queue.front()));
    in.queue.pop_front();
  }
  in.bytes -= taken;
  if (in.bytes < InMemoryPipe::kCapacity) in.writer.Complete({});
  return ReadResult::kData;
}

bool PipeEnd::CanWrite() const {
  std::lock_guard lock(state_->mu);
  const Direction& out = state_->to[1 - side_];
  return out.read_closed || out.bytes < InMemoryPipe::kCapacity;
}

void PipeEnd::Write(std::vector<Buffer>& pieces) {
  std::vector<Buffer> dropped;  // released after the lock
  {
    std::lock_guard lock(state_->mu);
    Direction& out = state_->to[1 - side_];
    RILL_DCHECK(!out.write_shut);
    if (out.read_closed) {
      dropped.swap(pieces);
    } else {
      for (Buffer& piece : pieces) {
        out.bytes += piece.size();
        out.queue.push_back(std::move(piece));
      }
      pieces.clear();
      out.reader.Complete({});
    }
  }
}

void PipeEnd::AsyncWaitReadable(asio::io_context& io, Handler handler) {
  std::lock_guard lock(state_->mu);
  Direction& in = state_->to[side_];
  RILL_DCHECK(!in.reader.pending());
  in.reader.io = &io;
  in.reader.handler = std::move(handler);
  if (in.read_closed) {
    in.reader.Complete(asio::error::operation_aborted);
  } else if (!in.queue.empty() || in.write_shut) {
    in.reader.Complete({});
  }
}

void PipeEnd::AsyncWaitWritable(asio::io_context& io, Handler handler) {
  std::lock_guard lock(state_->mu);
  Direction& out = state_->to[1 - side_];
  RILL_DCHECK(!out.writer.pending());
  out.writer.io = &io;
  out.writer.handler = std::move(handler);
  if (out.write_shut) {
    out.writer.Complete(asio::error::operation_aborted);
  } else if (out.read_closed || out.bytes < InMemoryPipe::kCapacity) {
    out.writer.Complete({});
  }
}

void PipeEnd::ShutdownWrite() {
  if (state_ == nullptr) return;
  std::lock_guard lock(state_->mu);
  Direction& out = state_->to[1 - side_];
  if (out.write_shut) return;
  out.write_shut = true;
  out.reader.Complete({});  // the peer reads end-of-stream
  out.writer.Complete(asio::error::operation_aborted);
}

void PipeEnd::Close() {
  if (state_ == nullptr) return;
  std::deque<Buffer> dropped;  // released after the lock
  {
    std::lock_guard lock(state_->mu);
    Direction& out = state_->to[1 - side_];
    Direction& in = state_->to[side_];
    if (!out.write_shut) {
      out.write_shut = true;
      out.reader.Complete({});
    }
    out.writer.Complete(asio::error::operation_aborted);
    in.read_closed = true;
    in.reader.Complete(asio::error::operation_aborted);
    dropped.swap(in.queue);
    in.bytes = 0;
    in.writer.Complete({});  // the peer's writes are dropped from now on: it may go on
  }
}

std::pair<PipeEnd, PipeEnd> InMemoryPipe::Create() {
  auto state = std::make_shared<pipe_detail::State>();
  return {PipeEnd(state, 0), PipeEnd(state, 1)};
}

}  // namespace rill::internal
