#include "rill/server.h"

#include "src/base/user_code.h"
#include "src/rpc/server_impl.h"

namespace rill {

struct ServerBuilder::Config : internal::ServerConfig {
  bool built = false;  // Build() took the configuration
};

ServerBuilder::ServerBuilder() : config_(std::make_unique<Config>()) {}
ServerBuilder::~ServerBuilder() = default;
ServerBuilder::ServerBuilder(ServerBuilder&&) noexcept = default;
ServerBuilder& ServerBuilder::operator=(ServerBuilder&&) noexcept = default;

ServerBuilder& ServerBuilder::AddListeningPort(std::string_view address, int* selected_port) {
  config_->ports.push_back({std::string(address), selected_port, nullptr});
  return *this;
}

ServerBuilder& ServerBuilder::AddListeningPort(std::string_view address,
                                               std::shared_ptr<ServerCredentials> credentials,
                                               int* selected_port) {
  config_->ports.push_back({std::string(address), selected_port, std::move(credentials)});
  return *this;
}

ServerBuilder& ServerBuilder::RegisterService(Service* service) {
  config_->services.push_back(service);
  return *this;
}

ServerBuilder& ServerBuilder::AddInterceptor(std::shared_ptr<ServerInterceptor> interceptor) {
  config_->interceptors.push_back(std::move(interceptor));
  return *this;
}

ServerBuilder& ServerBuilder::AddPlugin(std::shared_ptr<ServerPlugin> plugin) {
  config_->plugins.push_back(std::move(plugin));
  return *this;
}

ServerBuilder& ServerBuilder::AddStatsHandler(std::shared_ptr<StatsHandler> handler) {
  config_->stats_handlers.push_back(std::move(handler));
  return *this;
}

ServerBuilder& ServerBuilder::RegisterCompressor(std::shared_ptr<Compressor> compressor) {
  auto& all = config_->compressors;
  std::erase_if(all, [&](const auto& c) { return c->name() == compressor->name(); });
  all.push_back(std::move(compressor));
  return *this;
}

ServerBuilder& ServerBuilder::ClearCompressors() {
  config_->compressors.clear();
  return *this;
}

ServerBuilder& ServerBuilder::SetOptions(const ServerOptions& options) {
  config_->options = options;
  return *this;
}

ServerOptions& ServerBuilder::options() { return config_->options; }

ServerBuilder& ServerBuilder::SetReactors(ReactorPool* reactors) {
  config_->reactors = reactors;
  return *this;
}

ServerBuilder& ServerBuilder::SetReactorCount(size_t count) {
  config_->reactor_count = count;
  return *this;
}

ServerBuilder& ServerBuilder::SetBufferPool(BufferPool* pool) {
  config_->pool = pool;
  return *this;
}

StatusOr<std::unique_ptr<Server>> ServerBuilder::Build() {
  if (config_ == nullptr || config_->built) {
    return Status(StatusCode::kFailedPrecondition,
                  "ServerBuilder::Build() was already called on this builder");
  }
  config_->built = true;
  for (const auto& plugin : config_->plugins) {
    try {
      plugin->OnBuild(config_->services);
    } catch (...) {
      internal::LogUserException("ServerPlugin::OnBuild");
    }
  }
  auto impl = std::make_unique<internal::ServerImpl>(std::move(*config_));
  Status status = impl->Start();
  if (!status.ok()) return status;
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<internal::ServerImpl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Shutdown(); }

void Server::Shutdown(std::chrono::milliseconds grace) { impl_->Shutdown(grace); }

void Server::Shutdown() { impl_->Shutdown(impl_->options().shutdown_grace); }

void Server::Wait() { impl_->Wait(); }

std::shared_ptr<Channel> Server::InProcessChannel(const ChannelOptions& options) {
  return impl_->InProcessChannel(options);
}

std::shared_ptr<Channel> Server::InProcessChannel() { return InProcessChannel(ChannelOptions()); }

const std::vector<int>& Server::ports() const noexcept { return impl_->ports(); }

}  // namespace rill
