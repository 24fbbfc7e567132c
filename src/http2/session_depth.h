// Whether the calling thread is inside an HTTP/2 session's step (its Receive() or FillBatch(),
// that is, inside nghttp2's callbacks). User code must never run there: the layer above defers
// it. Inline, because the call paths ask it several times per RPC.
#ifndef RILL_SRC_HTTP2_SESSION_DEPTH_H_
#define RILL_SRC_HTTP2_SESSION_DEPTH_H_

namespace rill::internal {

// How many session steps the calling thread is inside (steps nest when a callback's work
// reaches another session of the same thread). Written by http2_session.cc only.
extern constinit thread_local int t_http2_session_depth;

inline bool InsideHttp2Session() noexcept { return t_http2_session_depth > 0; }

}  // namespace rill::internal

#endif  // RILL_SRC_HTTP2_SESSION_DEPTH_H_
