#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "grpc/health/v1/health.rill.h"
#include "rill/server.h"
#include "rill/services/health.h"

namespace rill {

namespace health_v1 = ::grpc::health::v1;

class HealthService::Impl final : public health_v1::Health::Service, public ServerPlugin {
 public:
  Impl() { statuses_.emplace("", ServingStatus::kServing); }

  Status Check(ServerContext& context, const health_v1::HealthCheckRequest& request,
               health_v1::HealthCheckResponse& response) override;
  Awaitable<Status> Watch(ServerContext& context, const health_v1::HealthCheckRequest& request,
                          ServerWriter<health_v1::HealthCheckResponse>& writer) override;

  void OnShutdown() override { Shutdown(); }

  void Set(std::string_view service, ServingStatus status);
  void Clear(std::string_view service);
  [[nodiscard]] ServingStatus Get(std::string_view service) const;
  void Shutdown();

 private:
  // One Watch call. `service` and `io` are immutable; `timer` and `changed` belong to the call's
  // reactor: only the Watch coroutine and the handlers posted to that reactor touch them.
  struct Watcher {
    std::string service;
    asio::io_context* io = nullptr;
    asio::steady_timer* timer = nullptr;  // null once the call ended
    bool changed = false;                 // a change was announced since the last look
  };

  // Removes the watcher when its Watch call ends, however it ends.
  class Registration {
   public:
    Registration(Impl* impl, std::shared_ptr<Watcher> watcher)
        : impl_(impl), watcher_(std::move(watcher)) {
      std::lock_guard lock(impl_->mu_);
      impl_->watchers_.push_back(watcher_);
    }
    ~Registration() {
      watcher_->timer = nullptr;
      std::lock_guard lock(impl_->mu_);
      std::erase(impl_->watchers_, watcher_);
    }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    Impl* impl_;
    std::shared_ptr<Watcher> watcher_;
  };

  // Wakes the watchers of `service` (every watcher when `all`) on their reactors.
  void NotifyLocked(std::string_view service, bool all);
  ServingStatus GetLocked(std::string_view service) const;

  mutable std::mutex mu_;
  std::map<std::string, ServingStatus, std::less<>> statuses_;  // guarded by mu_
  std::vector<std::shared_ptr<Watcher>> watchers_;              // guarded by mu_
  bool shut_down_ = false;                                      // guarded by mu_
};

Status HealthService::Impl::Check(ServerContext& /*context*/,
                                  const health_v1::HealthCheckRequest& request,
                                  health_v1::HealthCheckResponse& response) {
  const ServingStatus status = Get(request.service());
  if (status == ServingStatus::kServiceUnknown) {
    return Status(StatusCode::kNotFound, "unknown service \"" + request.service() + "\"");
  }
  response.set_status(static_cast<health_v1::HealthCheckResponse::ServingStatus>(status));
  return Status();
}

Awaitable<Status> HealthService::Impl::Watch(ServerContext& context,
                                             const health_v1::HealthCheckRequest& request,
                                             ServerWriter<health_v1::HealthCheckResponse>& writer) {
  asio::steady_timer timer(context.io_context());
  auto watcher = std::make_shared<Watcher>();
  watcher->service = request.service();
  watcher->io = &context.io_context();
  watcher->timer = &timer;
  const Registration registration(this, watcher);

  health_v1::HealthCheckResponse response;
  int sent = -1;  // nothing sent yet
  while (true) {
    watcher->changed = false;
    ServingStatus status;
    bool shut_down;
    {
      std::lock_guard lock(mu_);
      status = GetLocked(watcher->service);
      shut_down = shut_down_;
    }
    if (static_cast<int>(status) != sent) {
      response.set_status(static_cast<health_v1::HealthCheckResponse::ServingStatus>(status));
      if (!co_await writer.Write(response)) {
        co_return Status(StatusCode::kCancelled, "the watch ended");
      }
      sent = static_cast<int>(status);
      continue;  // a change may have come while the write waited
    }
    if (shut_down) co_return Status(StatusCode::kUnavailable, "the server is shutting down");
    if (context.IsCancelled()) co_return Status(StatusCode::kCancelled, "the watch was cancelled");

    timer.expires_at(asio::steady_timer::time_point::max());
    std::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    // Not woken by a change: the call's cancellation (client gone, deadline, shutdown) aborted
    // the wait.
    if (!watcher->changed) co_return Status(StatusCode::kCancelled, "the watch was cancelled");
  }
}

void HealthService::Impl::Set(std::string_view service, ServingStatus status) {
  std::lock_guard lock(mu_);
  if (shut_down_) return;
  auto it = statuses_.find(service);
  if (it == statuses_.end()) {
    statuses_.emplace(std::string(service), status);
  } else if (it->second == status) {
    return;
  } else {
    it->second = status;
  }
  NotifyLocked(service, false);
}

void HealthService::Impl::Clear(std::string_view service) {
  std::lock_guard lock(mu_);
  if (shut_down_) return;
  auto it = statuses_.find(service);
  if (it == statuses_.end()) return;
  statuses_.erase(it);
  NotifyLocked(service, false);
}

ServingStatus HealthService::Impl::Get(std::string_view service) const {
  std::lock_guard lock(mu_);
  return GetLocked(service);
}

ServingStatus HealthService::Impl::GetLocked(std::string_view service) const {
  auto it = statuses_.find(service);
  return it == statuses_.end() ? ServingStatus::kServiceUnknown : it->second;
}

void HealthService::Impl::Shutdown() {
  std::lock_guard lock(mu_);
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& entry : statuses_) entry.second = ServingStatus::kNotServing;
  NotifyLocked("", true);
}

void HealthService::Impl::NotifyLocked(std::string_view service, bool all) {
  for (const auto& watcher : watchers_) {
    if (!all && watcher->service != service) continue;
    // The posted handler holds the watcher, so it may run after the call ended: it then finds
    // no timer. The reactor outlives the watcher's registration (the server waits for every
    // handler before stopping its reactors).
    asio::post(*watcher->io, [watcher] {
      if (watcher->timer == nullptr) return;
      watcher->changed = true;
      watcher->timer->cancel();
    });
  }
}

HealthService::HealthService(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
HealthService::~HealthService() = default;

void HealthService::SetServingStatus(std::string_view service, ServingStatus status) {
  impl_->Set(service, status);
}

void HealthService::ClearServingStatus(std::string_view service) { impl_->Clear(service); }

ServingStatus HealthService::GetServingStatus(std::string_view service) const {
  return impl_->Get(service);
}

void HealthService::Shutdown() { impl_->Shutdown(); }

std::shared_ptr<HealthService> AddHealthService(ServerBuilder& builder) {
  auto impl = std::make_shared<HealthService::Impl>();
  builder.RegisterService(impl.get());
  builder.AddPlugin(impl);
  return std::shared_ptr<HealthService>(new HealthService(std::move(impl)));
}

}  // namespace rill
