// A protobuf arena with an inline first block, reset before each message it hands out, for the
// messages benchmain's workers and handlers parse into.
//
//   rill::bench::MessageArena arena;
//   while (...) {
//     auto* response = arena.Fresh<grpc::testing::SimpleResponse>();
//     co_await stub.UnaryCall(context, request, response, asio::use_awaitable);
//   }
//
// A reused heap message is not enough to parse without allocating: proto3's Clear() deletes
// sub-messages of heap messages, so `payload` and its body are allocated again on every parse.
// A fresh arena message that fits in the inline block costs no heap allocation; a larger one
// takes blocks from the heap, which the next Fresh() frees.
//
// Thread safety: thread-compatible. Neither copyable nor movable.
#ifndef RILL_BENCH_BENCHMAIN_MESSAGE_ARENA_H_
#define RILL_BENCH_BENCHMAIN_MESSAGE_ARENA_H_

#include <google/protobuf/arena.h>

#include <cstddef>

namespace rill::bench {

class MessageArena {
 public:
  static constexpr std::size_t kInlineBytes = 4096;

  MessageArena() : arena_(Options(block_)) {}
  MessageArena(const MessageArena&) = delete;
  MessageArena& operator=(const MessageArena&) = delete;

  // A new, empty message; every message handed out before is gone.
  template <typename T>
  T* Fresh() {
    arena_.Reset();
    return google::protobuf::Arena::CreateMessage<T>(&arena_);
  }

 private:
  static google::protobuf::ArenaOptions Options(char* block) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = kInlineBytes;
    return options;
  }

  alignas(std::max_align_t) char block_[kInlineBytes];
  google::protobuf::Arena arena_;
};

}  // namespace rill::bench

#endif  // RILL_BENCH_BENCHMAIN_MESSAGE_ARENA_H_
