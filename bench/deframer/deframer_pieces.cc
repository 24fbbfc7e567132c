// deframer_pieces: what one gRPC message costs the receive side's deframer when it arrives in
// pieces of a given size, each in its own pooled block, as a peer sending tiny DATA frames makes
// it arrive (rill copies DATA payloads under 1 KiB into blocks of their own). Prints the CPU
// seconds, the bytes the deframer copied while compacting, and how many views the message is.
//
//   deframer_pieces --message_bytes=1048576 --piece_bytes=1
#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <string>

#include "rill/mem/buffer_pool.h"
#include "src/rpc/deframer.h"

namespace {

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One gRPC message through the deframer in pieces of a given size."};
  size_t message_bytes = 1 << 20;
  size_t piece_bytes = 1;
  app.add_option("--message_bytes", message_bytes, "the message body")
      ->check(CLI::Range(size_t{1}, size_t{64} << 20));
  app.add_option("--piece_bytes", piece_bytes, "bytes per piece")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::string wire(5 + message_bytes, 'x');
  wire[0] = 0;
  for (int i = 0; i < 4; ++i) wire[1 + i] = static_cast<char>(message_bytes >> (24 - 8 * i));
  rill::TieredBufferPool pool;
  rill::internal::MessageDeframer deframer;
  deframer.Reset(message_bytes);
  rill::internal::Message message;
  rill::Status error;
  uint64_t copied = 0;
  const double began = CpuSeconds();
  for (size_t at = 0; at < wire.size(); at += piece_bytes) {
    deframer.Push(rill::Buffer::Copy(std::string_view(wire).substr(at, piece_bytes), pool));
    const uint64_t before = rill::CopiedPayloadBytes();
    const auto result = deframer.Next(message, error, pool);
    copied += rill::CopiedPayloadBytes() - before;
    if (result != rill::internal::MessageDeframer::Result::kNeedMore) break;
  }
  const double seconds = CpuSeconds() - began;
  if (message.body.size() != message_bytes) {
    std::fprintf(stderr, "no whole message came out: %s\n", std::string(error.message()).c_str());
    return 1;
  }
  std::printf("message %zu B in %zu-byte pieces: %.3f s CPU, %.1f MB copied by compaction "
              "(%.1f per message byte), %zu views\n",
              message_bytes, piece_bytes, seconds, static_cast<double>(copied) / 1e6,
              static_cast<double>(copied) / static_cast<double>(message_bytes),
              message.body.buffer_count());
  return 0;
}
