// The allocator rill hands to nghttp2 (nghttp2_mem): per-thread free lists in size classes, so a
// session's per-stream objects, frames and decoded header buffers stop reaching the heap once the
// lists are warm. Blocks carry their class in a small prefix; a block freed on another thread
// joins that thread's lists.
#ifndef RILL_SRC_HTTP2_NGHTTP2_MEMORY_H_
#define RILL_SRC_HTTP2_NGHTTP2_MEMORY_H_

#include <nghttp2/nghttp2.h>

namespace rill::internal {

// A process-wide nghttp2_mem; its functions are thread-safe.
nghttp2_mem* Nghttp2Allocator();

}  // namespace rill::internal

#endif  // RILL_SRC_HTTP2_NGHTTP2_MEMORY_H_
