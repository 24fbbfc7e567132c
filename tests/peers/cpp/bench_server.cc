// grpc.testing.BenchmarkService on libgrpc++'s asynchronous completion-queue API: the fastest
// server libgrpc++ offers, and the baseline rill's server is compared against.
//
//   peer_cpp_bench_server --port=0 --threads=2
//   peer_cpp_bench_server --port=0 --tls_cert_file=server.pem --tls_key_file=server.key  # TLS
//
// Serves UnaryCall and StreamingCall (ping-pong: one response per request until the client
// half-closes); each response's payload body is the request's response_size zero bytes. The
// other BenchmarkService methods finish with UNIMPLEMENTED. Prints
// `listening on <port>` once ready and shuts down cleanly on SIGINT or SIGTERM.
//
// Each thread polls its own completion queue. Every queue has --calls_per_cq call objects per
// method waiting for calls; a call object serves one call at a time and is reused for the next
// one, keeping its request and response messages (and their buffers). Only the ServerContext
// and the responder, which libgrpc++ forbids reusing, are rebuilt in place per call.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/benchmark_service.grpc.pb.h"
#include "grpc/testing/messages.pb.h"
#include "tests/peers/cpp/peer_flags.h"
#include "tests/testing/stop_signals.h"

namespace peer {
namespace {

using grpc::ServerCompletionQueue;
using grpc::ServerContext;
using grpc::Status;
using grpc::testing::BenchmarkService;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

// UnaryCall and StreamingCall are served through the completion queues. The other methods are
// marked generic and reach the generic service, whose handler refuses them with UNIMPLEMENTED:
// an async method nobody requests would hold its calls until their deadline, and a sync one
// would start libgrpc++'s synchronous-server threads next to the pollers.
using AsyncService =
    BenchmarkService::WithAsyncMethod_UnaryCall<BenchmarkService::WithAsyncMethod_StreamingCall<
        BenchmarkService::WithGenericMethod_StreamingFromClient<
            BenchmarkService::WithGenericMethod_StreamingFromServer<
                BenchmarkService::WithGenericMethod_StreamingBothWays<
                    BenchmarkService::Service>>>>>;

// One completion queue, the thread that polls it, and the call objects whose tags it returns.
// After `shutdown` is set (under `mutex`) no call object asks for a new call on the queue, so
// the queue can be shut down. Thread-safe as far as `mutex` guards `shutdown`.
struct QueueState {
  std::unique_ptr<ServerCompletionQueue> queue;
  std::mutex mutex;
  bool shutdown = false;
};

// A call object: its address is the tag of every operation it starts, one at a time.
// Reactor-confined: only the thread polling its queue touches it.
class CallHandler {
 public:
  virtual ~CallHandler() = default;
  // Continues the call after the operation started last completed with `ok`.
  virtual void Proceed(bool ok) = 0;
};

void FillResponse(const SimpleRequest& request, SimpleResponse* response) {
  // assign() reuses the body's capacity from the previous call.
  response->mutable_payload()->mutable_body()->assign(
      static_cast<size_t>(std::max(request.response_size(), 0)), '\0');
}

class UnaryHandler final : public CallHandler {
 public:
  UnaryHandler(AsyncService* service, QueueState* queue) : service_(service), queue_(queue) {
    AwaitCall();
  }

  void Proceed(bool ok) override {
    if (state_ == State::kAwaitingCall) {
      if (!ok) return;  // The server is shutting down.
      FillResponse(request_, &response_);
      state_ = State::kFinishing;
      responder_->Finish(response_, Status::OK, this);
      return;
    }
    std::lock_guard<std::mutex> lock(queue_->mutex);
    if (!queue_->shutdown) AwaitCall();
  }

 private:
  enum class State { kAwaitingCall, kFinishing };

  void AwaitCall() {
    responder_.reset();
    context_.emplace();
    responder_.emplace(&*context_);
    state_ = State::kAwaitingCall;
    service_->RequestUnaryCall(&*context_, &request_, &*responder_, queue_->queue.get(),
                               queue_->queue.get(), this);
  }

  AsyncService* service_;
  QueueState* queue_;
  State state_ = State::kAwaitingCall;
  std::optional<ServerContext> context_;
  std::optional<grpc::ServerAsyncResponseWriter<SimpleResponse>> responder_;
  SimpleRequest request_;
  SimpleResponse response_;
};

class StreamingHandler final : public CallHandler {
 public:
  StreamingHandler(AsyncService* service, QueueState* queue) : service_(service), queue_(queue) {
    AwaitCall();
  }

  void Proceed(bool ok) override {
    switch (state_) {
      case State::kAwaitingCall:
        if (!ok) return;  // The server is shutting down.
        Read();
        return;
      case State::kReading:
        if (!ok) {  // The client half-closed (or went away).
          state_ = State::kFinishing;
          stream_->Finish(Status::OK, this);
          return;
        }
        FillResponse(request_, &response_);
        state_ = State::kWriting;
        stream_->Write(response_, this);
        return;
      case State::kWriting:
        if (!ok) {
          state_ = State::kFinishing;
          stream_->Finish(Status::OK, this);
          return;
        }
        Read();
        return;
      case State::kFinishing: {
        std::lock_guard<std::mutex> lock(queue_->mutex);
        if (!queue_->shutdown) AwaitCall();
        return;
      }
    }
  }

 private:
  enum class State { kAwaitingCall, kReading, kWriting, kFinishing };

  void AwaitCall() {
    stream_.reset();
    context_.emplace();
    stream_.emplace(&*context_);
    state_ = State::kAwaitingCall;
    service_->RequestStreamingCall(&*context_, &*stream_, queue_->queue.get(), queue_->queue.get(),
                                   this);
  }

  void Read() {
    state_ = State::kReading;
    stream_->Read(&request_, this);
  }

  AsyncService* service_;
  QueueState* queue_;
  State state_ = State::kAwaitingCall;
  std::optional<ServerContext> context_;
  std::optional<grpc::ServerAsyncReaderWriter<SimpleResponse, SimpleRequest>> stream_;
  SimpleRequest request_;
  SimpleResponse response_;
};

// Refuses every call to a method without a handler (the generic ones, and unknown paths).
class UnimplementedHandler final : public CallHandler {
 public:
  UnimplementedHandler(grpc::AsyncGenericService* service, QueueState* queue)
      : service_(service), queue_(queue) {
    AwaitCall();
  }

  void Proceed(bool ok) override {
    if (!finishing_) {
      if (!ok) return;  // The server is shutting down.
      finishing_ = true;
      stream_->Finish(Status(grpc::StatusCode::UNIMPLEMENTED, "not served by this benchmark"),
                      this);
      return;
    }
    std::lock_guard<std::mutex> lock(queue_->mutex);
    if (!queue_->shutdown) AwaitCall();
  }

 private:
  void AwaitCall() {
    stream_.reset();
    context_.emplace();
    stream_.emplace(&*context_);
    finishing_ = false;
    service_->RequestCall(&*context_, &*stream_, queue_->queue.get(), queue_->queue.get(), this);
  }

  grpc::AsyncGenericService* service_;
  QueueState* queue_;
  bool finishing_ = false;
  std::optional<grpc::GenericServerContext> context_;
  std::optional<grpc::GenericServerAsyncReaderWriter> stream_;
};

void Poll(ServerCompletionQueue* queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) static_cast<CallHandler*>(tag)->Proceed(ok);
}

int Main(int argc, char** argv) {
  PeerFlags flags({{"port", "0"},
                   {"threads", "1"},
                   {"calls_per_cq", "128"},
                   {"tls_cert_file", ""},
                   {"tls_key_file", ""}});
  if (!flags.Parse(argc, argv)) return 2;
  int port = flags.GetInt("port");
  int threads = flags.GetInt("threads");
  int calls_per_cq = flags.GetInt("calls_per_cq");
  if (port < 0 || port > 65535 || threads < 1 || calls_per_cq < 1) {
    std::fprintf(stderr, "bad flags: --port, --threads and --calls_per_cq must be positive\n");
    return 2;
  }

  const rill::test::StopSignals stop;  // before any thread starts: they inherit the mask

  AsyncService service;
  grpc::AsyncGenericService generic_service;
  grpc::ServerBuilder builder;
  int selected_port = 0;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!flags.Get("tls_cert_file").empty()) {
    grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    ssl.pem_key_cert_pairs.push_back(
        {ReadWholeFile(flags.Get("tls_key_file")), ReadWholeFile(flags.Get("tls_cert_file"))});
    credentials = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort("[::]:" + std::to_string(port), credentials, &selected_port);
  builder.RegisterService(&service);
  builder.RegisterAsyncGenericService(&generic_service);
  // Benchmarks may use messages above the default 4 MiB limit.
  builder.SetMaxReceiveMessageSize(INT_MAX);
  builder.SetMaxSendMessageSize(INT_MAX);
  std::vector<std::unique_ptr<QueueState>> queues;
  for (int i = 0; i < threads; ++i) {
    queues.push_back(std::make_unique<QueueState>());
    queues.back()->queue = builder.AddCompletionQueue();
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || selected_port == 0) {
    std::fprintf(stderr, "cannot listen on port %d\n", port);
    return 1;
  }

  std::vector<std::unique_ptr<CallHandler>> handlers;
  for (auto& queue : queues) {
    for (int i = 0; i < calls_per_cq; ++i) {
      handlers.push_back(std::make_unique<UnaryHandler>(&service, queue.get()));
      handlers.push_back(std::make_unique<StreamingHandler>(&service, queue.get()));
    }
    handlers.push_back(std::make_unique<UnimplementedHandler>(&generic_service, queue.get()));
  }
  std::vector<std::thread> pollers;
  for (auto& queue : queues) pollers.emplace_back(Poll, queue->queue.get());

  stop.AnnounceAndWait(selected_port);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  for (auto& queue : queues) {
    {
      std::lock_guard<std::mutex> lock(queue->mutex);
      queue->shutdown = true;
    }
    queue->queue->Shutdown();
  }
  for (std::thread& poller : pollers) poller.join();
  handlers.clear();
  return 0;
}

}  // namespace
}  // namespace peer

int main(int argc, char** argv) { return peer::Main(argc, argv); }
