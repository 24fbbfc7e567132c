// Interceptors: code that runs around every call, on the server or on the client.
//
// Interceptors are registered on the ServerBuilder / ChannelOptions and run in registration
// order before the call (the first registered runs first) and in reverse order after it, for
// unary and streaming calls alike.
//
//   class AuthInterceptor : public rill::ServerInterceptor {
//    public:
//     rill::Status OnCallStart(rill::ServerContext& ctx) override {
//       if (ctx.client_metadata().Get("authorization") != "Bearer let-me-in")
//         return rill::Status(rill::StatusCode::kUnauthenticated, "who are you?");
//       return rill::Status();
//     }
//   };
//
// Where they run: on the call's reactor, never inside the HTTP/2 session's callbacks. An
// exception an interceptor throws fails that call — UNKNOWN on the server ("unexpected error
// in RPC handling"; the exception itself is logged through rill/log.h, not sent), UNKNOWN on
// the client — and nothing else: the connection and the process live on. An interceptor must
// not block (it runs on a reactor thread).
//
// Thread safety: interceptors are shared by all reactors and must be thread-safe.
#ifndef RILL_INTERCEPTOR_H_
#define RILL_INTERCEPTOR_H_

#include <string_view>

#include "rill/client_context.h"
#include "rill/server_context.h"
#include "rill/status.h"

namespace rill {

class ServerInterceptor {
 public:
  virtual ~ServerInterceptor() = default;
  // Before the handler runs: may read and change the client's metadata, add initial or trailing
  // metadata, or reject the call by returning a non-OK status (the handler then does not run,
  // the request's buffers are still freed, and later interceptors are skipped).
  virtual Status OnCallStart(ServerContext& context) { return Status(); }
  // After the call finished (also when it was rejected or cancelled): may observe or replace the
  // status and trailing metadata before they are sent. Called for every interceptor whose
  // OnCallStart ran.
  virtual void OnCallEnd(ServerContext& context, Status& status) {}
};

class ClientInterceptor {
 public:
  virtual ~ClientInterceptor() = default;
  // Before the call starts: may change the context's metadata or deadline, or fail the call by
  // returning a non-OK status (nothing is sent).
  virtual Status OnCallStart(ClientContext& context, std::string_view method) { return Status(); }
  // After the call completed: may observe or replace the status.
  virtual void OnCallEnd(ClientContext& context, std::string_view method, Status& status) {}
};

}  // namespace rill

#endif  // RILL_INTERCEPTOR_H_
