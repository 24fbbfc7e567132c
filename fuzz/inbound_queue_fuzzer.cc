// Feeds arbitrary DATA payload, cut into arbitrary pieces, through a stream's InboundQueue (and
// so its MessageDeframer), taking messages out at arbitrary moments, under both flow-control
// policies. The session behind it has no such stream (credit calls become no-ops), which is
// what a stream reset mid-message looks like to the queue.
//
// Checked, besides the sanitizers, against a plain reading of gRPC's length-prefixed framing:
//   - the messages that come out are exactly the ones the bytes frame, in order, with their
//     compressed flags, however the bytes were cut and whenever messages were taken;
//   - a bad flag byte or a declared size above the limit is reported by the Push that
//     completes that prefix, never earlier or later, and nothing is queued after it;
//   - every pooled block is back once the queue is cleared.
//
// Input layout:
//   byte 0   bits 0-4: max message size = 2^(bits) - 1; bit 5: credit on receipt
//   byte 1   seed for the cuts and for when messages are taken
//   rest     the stream's DATA payload
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rill/detail/check.h"
#include "rill/mem/buffer.h"
#include "rill/mem/buffer_pool.h"
#include "src/http2/http2_session.h"
#include "src/rpc/inbound_queue.h"

namespace rill::internal {
namespace {

struct Expected {
  std::vector<std::pair<bool, std::string>> messages;  // (compressed, body)
  size_t error_at = SIZE_MAX;  // offset just past the prefix that is an error
};

Expected ReadFraming(std::string_view bytes, size_t max_message_size) {
  Expected out;
  size_t at = 0;
  while (bytes.size() - at >= 5) {
    const auto flag = static_cast<uint8_t>(bytes[at]);
    const uint32_t size = (uint32_t{static_cast<uint8_t>(bytes[at + 1])} << 24) |
                          (uint32_t{static_cast<uint8_t>(bytes[at + 2])} << 16) |
                          (uint32_t{static_cast<uint8_t>(bytes[at + 3])} << 8) |
                          uint32_t{static_cast<uint8_t>(bytes[at + 4])};
    if (flag > 1 || size > max_message_size) {
      out.error_at = at + 5;
      return out;
    }
    if (bytes.size() - at - 5 < size) break;
    out.messages.emplace_back(flag == 1, std::string(bytes.substr(at + 5, size)));
    at += 5 + size;
  }
  return out;
}

class NoStreams final : public Http2Handler {
 public:
  void OnStreamBegin(int32_t) override {}
  void OnHeader(int32_t, void*, HeadersKind, std::string_view, std::string_view) override {}
  void OnHeadersEnd(int32_t, void*, HeadersKind, bool) override {}
  void OnData(int32_t, void*, Buffer) override {}
  void OnRemoteEnd(int32_t, void*) override {}
  void OnStreamClose(int32_t, void*, uint32_t) override {}
};

}  // namespace
}  // namespace rill::internal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  using namespace rill::internal;
  if (size < 2) return 0;
  const size_t max_message_size = (size_t{1} << (data[0] & 0x1f)) - 1;
  const bool credit_on_receipt = (data[0] & 0x20) != 0;
  uint32_t seed = data[1] * 2654435761u + 1;
  const std::string_view payload(reinterpret_cast<const char*>(data + 2), size - 2);
  const Expected expected = ReadFraming(payload, max_message_size);

  BufferPool& pool = DefaultBufferPool();
  const uint64_t blocks_before = pool.Stats().blocks_out;
  {
    Http2Options options;
    options.server = true;
    NoStreams handler;
    Http2Session session(options, &handler, pool);
    InboundQueue queue;
    queue.Reset(max_message_size, credit_on_receipt);
    size_t taken = 0;
    auto take = [&] {
      Message message = queue.Pop(credit_on_receipt ? nullptr : &session, 1);
      RILL_CHECK_MSG(taken < expected.messages.size(), "a message the bytes do not frame");
      RILL_CHECK(message.compressed == expected.messages[taken].first);
      RILL_CHECK_MSG(message.body.Materialize() == expected.messages[taken].second,
                     "message body differs from the framed bytes");
      ++taken;
    };
    size_t at = 0;
    bool failed = false;
    while (at < payload.size() && !failed) {
      seed = seed * 1103515245u + 12345u;
      const size_t piece = std::min<size_t>(payload.size() - at, 1 + (seed >> 16) % 64);
      Status status = queue.Push(Buffer::Copy(payload.substr(at, piece), pool), session, 1, pool);
      at += piece;
      if (!status.ok()) {
        RILL_CHECK_MSG(expected.error_at != SIZE_MAX && at >= expected.error_at &&
                           at - piece < expected.error_at,
                       "framing error reported by the wrong Push");
        RILL_CHECK(queue.empty());
        failed = true;
        break;
      }
      RILL_CHECK_MSG(at < expected.error_at, "framing error not reported");
      // Take some of what is queued now, or leave it for later.
      while (!queue.empty() && ((seed >> 8) & 1) != 0) {
        take();
        seed = seed * 1103515245u + 12345u;
      }
    }
    if (!failed) {
      while (!queue.empty()) take();
      RILL_CHECK_MSG(taken == expected.messages.size(), "a framed message was lost");
    }
    queue.Clear();
  }
  RILL_CHECK_MSG(pool.Stats().blocks_out == blocks_before, "a pooled buffer block leaked");
  return 0;
}
