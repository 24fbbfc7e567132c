#include "rill/credentials.h"

#include <fstream>
#include <sstream>

#include "src/transport/tls_context.h"

namespace rill {

StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "cannot open " + path);
  std::ostringstream content;
  content << in.rdbuf();
  return std::move(content).str();
}

StatusOr<TlsKeyPair> TlsKeyPair::FromFiles(const std::string& certificate_chain_path,
                                           const std::string& private_key_path) {
  StatusOr<std::string> chain = ReadFileToString(certificate_chain_path);
  if (!chain.ok()) return chain.status();
  StatusOr<std::string> key = ReadFileToString(private_key_path);
  if (!key.ok()) return key.status();
  return TlsKeyPair{std::move(*chain), std::move(*key)};
}

ServerCredentials::ServerCredentials(std::shared_ptr<internal::TlsContext> context)
    : secure_(context != nullptr), context_(std::move(context)) {}

ServerCredentials::~ServerCredentials() = default;

std::shared_ptr<ServerCredentials> ServerCredentials::Insecure() {
  return std::shared_ptr<ServerCredentials>(new ServerCredentials(nullptr));
}

StatusOr<std::shared_ptr<ServerCredentials>> ServerCredentials::Tls(
    const ServerTlsOptions& options) {
  auto context = internal::TlsContext::ForServer(options);
  if (!context.ok()) return context.status();
  std::shared_ptr<ServerCredentials> credentials(new ServerCredentials(std::move(*context)));
  credentials->options_ = options;
  return credentials;
}

std::shared_ptr<internal::TlsContext> ServerCredentials::context() const {
  std::lock_guard lock(mu_);
  return context_;
}

Status ServerCredentials::Reload(const TlsKeyPair& key_pair) {
  ServerTlsOptions options;
  {
    std::lock_guard lock(mu_);
    options = options_;
  }
  options.key_pair = key_pair;
  return Reload(options);
}

Status ServerCredentials::Reload(const ServerTlsOptions& options) {
  if (!secure_) {
    return Status(StatusCode::kFailedPrecondition, "insecure credentials have no certificate");
  }
  auto context = internal::TlsContext::ForServer(options);
  if (!context.ok()) return context.status();
  std::lock_guard lock(mu_);
  options_ = options;
  context_ = std::move(*context);  // connections that began with the old one keep it
  return Status();
}

ChannelCredentials::ChannelCredentials(std::shared_ptr<internal::TlsContext> context,
                                       std::string name_override)
    : context_(std::move(context)), server_name_override_(std::move(name_override)) {}

ChannelCredentials::~ChannelCredentials() = default;

std::shared_ptr<ChannelCredentials> ChannelCredentials::Insecure() {
  return std::shared_ptr<ChannelCredentials>(new ChannelCredentials(nullptr, {}));
}

StatusOr<std::shared_ptr<ChannelCredentials>> ChannelCredentials::Tls(
    const ChannelTlsOptions& options) {
  auto context = internal::TlsContext::ForClient(options);
  if (!context.ok()) return context.status();
  return std::shared_ptr<ChannelCredentials>(
      new ChannelCredentials(std::move(*context), options.server_name_override));
}

}  // namespace rill
