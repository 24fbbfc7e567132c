// What the HTTP/2 session fuzzers share: how input is cut into read blocks, and draining a
// session's output the way a socket would.
#ifndef RILL_FUZZ_HTTP2_FUZZ_SUPPORT_H_
#define RILL_FUZZ_HTTP2_FUZZ_SUPPORT_H_

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>

#include "rill/detail/check.h"
#include "src/http2/http2_session.h"
#include "src/http2/output_batch.h"

namespace rill::internal {

// Sizes of successive read blocks.
class Splitter {
 public:
  Splitter(uint8_t mode, uint8_t seed) : mode_(mode), state_(seed | 1u) {}
  size_t Next(size_t remaining) {
    static constexpr size_t kFixed[] = {0, 1, 9, 64, 1000, 4096, 16384 + 9};
    size_t n = 0;
    if (mode_ < std::size(kFixed)) {
      n = kFixed[mode_] == 0 ? remaining : kFixed[mode_];
    } else {
      state_ = state_ * 1103515245u + 12345u;
      n = 1 + (state_ >> 16) % 2048;
    }
    return std::min(n, remaining);
  }

 private:
  uint8_t mode_;
  uint32_t state_;
};

// Writes out everything the session has to send, reading every byte like a socket would.
inline bool Drain(Http2Session& session, OutputBatch& batch, uint64_t& checksum) {
  for (int round = 0; round < 64; ++round) {
    const Status status = session.FillBatch(batch);
    size_t total = 0;
    for (const iovec& iov : batch.iovecs()) {
      const auto* p = static_cast<const uint8_t*>(iov.iov_base);
      for (size_t i = 0; i < iov.iov_len; ++i) checksum += p[i];
      total += iov.iov_len;
    }
    RILL_CHECK_MSG(total == batch.bytes(), "OutputBatch iovecs disagree with bytes()");
    const bool wrote = !batch.empty();
    batch.Consume(batch.bytes());
    if (!status.ok()) return false;
    if (!wrote || !session.WantsWrite()) return true;
  }
  return true;
}

}  // namespace rill::internal

#endif  // RILL_FUZZ_HTTP2_FUZZ_SUPPORT_H_
