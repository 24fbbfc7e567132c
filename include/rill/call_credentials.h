// Per-call credentials: metadata added to every call (a bearer token, say), produced by a
// plugin that may take its time (fetch or refresh a token) without blocking anything.
//
//   class TokenCredentials : public rill::CallCredentials {
//    public:
//     void GetMetadata(const rill::CallCredentialsInfo& info, Done done) override {
//       // Answer now, or keep `done` and call it later from any thread (after a fetch).
//       rill::Metadata metadata;
//       metadata.Add("authorization", "Bearer " + CurrentToken());
//       done(std::move(metadata));
//     }
//   };
//   ChannelOptions options;
//   options.call_credentials = std::make_shared<TokenCredentials>();   // every call, or
//   context.set_credentials(std::make_shared<TokenCredentials>());    // one call
//
// Credentials are sent only on secure (TLS) channels: on a plaintext channel a call with call
// credentials fails with UNAUTHENTICATED unless allow_insecure() says otherwise.
//
// Thread safety: GetMetadata is called on the channel's reactor, one call at a time per call but
// concurrently for different calls of different channels; a plugin shared between channels must
// be thread-safe.
#ifndef RILL_CALL_CREDENTIALS_H_
#define RILL_CALL_CREDENTIALS_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "rill/metadata.h"
#include "rill/status_or.h"

namespace rill {

// What a plugin knows about the call it is asked about.
struct CallCredentialsInfo {
  std::string_view authority;  // the call's :authority
  std::string_view method;     // "/package.Service/Method"
  // "https://<authority>/package.Service": the audience token issuers commonly expect.
  std::string service_url;
  bool secure = false;  // the channel uses TLS
};

class CallCredentials {
 public:
  // Takes the metadata for the call, or the reason there is none. Callable from any thread.
  using Done = std::function<void(StatusOr<Metadata> metadata)>;

  virtual ~CallCredentials() = default;

  // Produces the call's metadata and calls `done` once, before returning or later, from any
  // thread (the call waits meanwhile). The call's deadline and cancellation still run, and a call
  // that ended or a channel that was destroyed meanwhile does not wait for `done`: a late answer
  // is ignored. Destroying `done` without calling it fails the call with UNAVAILABLE.
  // Runs on the channel's reactor, never inside the HTTP/2 parser: it must not block. A non-OK
  // status fails the call: UNAUTHENTICATED and UNAVAILABLE as given, other codes as UNAVAILABLE,
  // with the plugin's message. An exception fails the call with UNAVAILABLE (and is logged).
  virtual void GetMetadata(const CallCredentialsInfo& info, Done done) = 0;

  // Whether the metadata may travel over a plaintext channel (default: no).
  [[nodiscard]] virtual bool allow_insecure() const { return false; }
};

// "authorization: Bearer <token>" on every call.
std::shared_ptr<CallCredentials> AccessTokenCredentials(std::string token);

}  // namespace rill

#endif  // RILL_CALL_CREDENTIALS_H_
