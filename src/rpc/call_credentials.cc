#include "rill/call_credentials.h"

namespace rill {
namespace {

class AccessToken final : public CallCredentials {
 public:
  explicit AccessToken(std::string token) : value_("Bearer " + std::move(token)) {}
  void GetMetadata(const CallCredentialsInfo& /*info*/, Done done) override {
    Metadata metadata;
    metadata.Add("authorization", value_);
    done(std::move(metadata));
  }

 private:
  const std::string value_;
};

}  // namespace

std::shared_ptr<CallCredentials> AccessTokenCredentials(std::string token) {
  return std::make_shared<AccessToken>(std::move(token));
}

}  // namespace rill
