// DESIGN §1 receive steps 6 and 7, observed from the outside: a request's buffers are back in
// the pool before its handler runs, also when no handler runs at all (an interceptor rejected the
// call), and queued buffers go back when a stream ends.
//
// The server gets a pool of its own, so the counts it shows belong to the server alone (the
// client in the same process uses the test's default pool).
#include <gmock/gmock.h>
#include <gtest/gtest.h>


#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <initializer_list>
#include <mutex>
#include <thread>

#include "grpc/testing/test.rill.h"
#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/mem/leak_checking_pool.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

// The server's pool as a handler sees it.
struct PoolSnapshot {
  uint64_t blocks_out = 0;
  uint64_t bytes_out = 0;
  int64_t small_out = 0;
  size_t request_body = 0;  // the request was parsed whole
  bool taken = false;
};

class SnapshotService final : public TestService::Service {
 public:
  // `client_io` is the reactor of the test's channels. Small blocks are counted process-wide, so
  // the handler lets that reactor finish what it was doing (releasing the request it just sent)
  // before counting them; the server's own state cannot change meanwhile, since the handler
  // holds the server's reactor.
  SnapshotService(BufferPool& pool, asio::io_context& client_io)
      : pool_(pool), client_io_(client_io) {}

  // Plain handler: runs inline on the reactor, inside the read that completed the request.
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    Take(request);
    return Status();
  }

  // Coroutine handler.
  Awaitable<Status> CacheableUnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                            SimpleResponse& response) override {
    Take(request);
    co_return Status();
  }

  // Never reads: its messages stay queued until the stream ends.
  Awaitable<Status> StreamingInputCall(ServerContext& context,
                                       ServerReader<StreamingInputCallRequest>& reader,
                                       StreamingInputCallResponse& response) override {
    asio::steady_timer timer(context.io_context(), std::chrono::minutes(1));
    asio::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    stream_handler_done.Notify();
    co_return Status();
  }

  PoolSnapshot snapshot() {
    std::lock_guard lock(mu_);
    return snapshot_;
  }

  Notification stream_handler_done;

 private:
  void Take(const SimpleRequest& request) {
    PoolSnapshot s;
    const BufferPoolStats stats = pool_.Stats();
    s.blocks_out = stats.blocks_out;
    s.bytes_out = stats.bytes_out;
    DrainReactor(client_io_);
    s.small_out = SmallBlocksOutstanding();
    s.request_body = request.payload().body().size();
    s.taken = true;
    std::lock_guard lock(mu_);
    snapshot_ = s;
  }

  BufferPool& pool_;
  asio::io_context& client_io_;
  std::mutex mu_;
  PoolSnapshot snapshot_;
};

// Rejects every call; records the server pool as it is when the call ends.
class RejectingInterceptor final : public ServerInterceptor {
 public:
  explicit RejectingInterceptor(BufferPool& pool) : pool_(pool) {}
  Status OnCallStart(ServerContext& context) override {
    return Status(StatusCode::kUnauthenticated, "no credentials");
  }
  void OnCallEnd(ServerContext& context, Status& status) override {
    std::lock_guard lock(mu_);
    end_stats_ = pool_.Stats();
    end_small_ = SmallBlocksOutstanding();
    ended_ = true;
  }
  BufferPoolStats end_stats() {
    std::lock_guard lock(mu_);
    return end_stats_;
  }
  int64_t end_small() {
    std::lock_guard lock(mu_);
    return end_small_;
  }
  bool ended() {
    std::lock_guard lock(mu_);
    return ended_;
  }

 private:
  BufferPool& pool_;
  std::mutex mu_;
  BufferPoolStats end_stats_;
  int64_t end_small_ = 0;
  bool ended_ = false;
};

// Polls `condition` until it holds (true) or kMustComplete passed (false).
template <typename Condition>
bool WaitFor(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + kMustComplete;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// The output batch's staging block (src/http2/output_batch.h, kStagingSize).
constexpr size_t kStagingBlock = 16 * 1024;

class RequestBuffersTest : public ::testing::TestWithParam<Transport> {
 protected:
  void StartServer(std::shared_ptr<ServerInterceptor> interceptor = nullptr) {
    TestServerSetup setup;
    setup.services.push_back(&service_);
    if (interceptor) setup.interceptors.push_back(std::move(interceptor));
    setup.pool = &server_pool_;
    setup.reactors = &server_reactors_;
    // A read block grows up to 8 times the option while reads come back full (rill/server.h);
    // besides it, the staging block of frames the server is writing may be out (the
    // WINDOW_UPDATEs it sends while a large request arrives; in-process the client holds that
    // block until it has read them).
    max_read_block_ = 8 * setup.options.read_block_size + kStagingBlock;
    server_ = TestServer::Start(GetParam(), setup);
    ASSERT_NE(server_, nullptr);
  }

  // Channels on the test's client reactor.
  std::shared_ptr<Channel> NewChannel() {
    ChannelOptions options;
    options.reactors = &client_reactors_;
    return server_->NewChannel(options);
  }

  // Makes `call` with requests of each size; the handler must have seen the whole request
  // parsed while at most the read block whose bytes completed it (the handler runs inside that
  // read) and the staging block of frames being written were still out, although the request
  // spans many blocks.
  template <typename Call>
  void ExpectFreedBeforeTheHandler(std::initializer_list<size_t> sizes, Call call) {
    for (size_t size : sizes) {
      ClientContext context;
      const SimpleRequest request = RequestOfSize(size);
      SimpleResponse response;
      const Status status = call(context, request, response);
      ASSERT_TRUE(status.ok()) << status;
      const PoolSnapshot s = service_.snapshot();
      ASSERT_TRUE(s.taken);
      EXPECT_EQ(s.request_body, request.payload().body().size());
      EXPECT_LE(s.blocks_out, 2u) << size;
      EXPECT_LE(s.bytes_out, max_read_block_) << size;
    }
  }

  // The server's reactor has finished whatever it was doing.
  void DrainServer() { DrainReactor(server_reactors_.reactor(0)); }
  // Both reactors have: no request or response is in flight anywhere. Draining the server can
  // make it write once more (flow control: a WINDOW_UPDATE or a window SETTINGS after a BDP
  // ping's ACK, which in-process hand the client views of the server's blocks), and the
  // client's answer to that one more reply, so it takes a few rounds.
  void DrainBoth() {
    for (int round = 0; round < 3; ++round) {
      DrainReactor(client_reactors_.reactor(0));
      DrainServer();
    }
  }

  void TearDown() override {
    server_.reset();
    EXPECT_EQ(server_pool_.Stats().blocks_out, 0u);
    EXPECT_EQ(server_pool_.CheckAndReset(), "");
  }

  LeakCheckingBufferPool server_pool_;
  ReactorPool server_reactors_{{.threads = 1, .cpus = {}}};
  ReactorPool client_reactors_{{.threads = 1, .cpus = {}}};
  SnapshotService service_{server_pool_, client_reactors_.reactor(0)};
  std::unique_ptr<TestServer> server_;
  size_t max_read_block_ = 0;  // the largest read block, and a staging block
};

TEST_P(RequestBuffersTest, PooledRequestIsFreedBeforeAPlainHandlerRuns) {
  StartServer();
  auto channel = NewChannel();
  TestService::Stub stub(channel);
  ExpectFreedBeforeTheHandler({64 * 1024, 1024 * 1024, 4 * 1024 * 1024},
                              [&](ClientContext& context, const SimpleRequest& request,
                                  SimpleResponse& response) {
                                return stub.UnaryCall(context, request, &response);
                              });
  // Both sides: in-process, the client reads views of the server's blocks and lets them go
  // on its own reactor after the call completed.
  DrainBoth();
  EXPECT_EQ(server_pool_.Stats().blocks_out, 0u) << "an idle connection holds pooled blocks";
}

TEST_P(RequestBuffersTest, PooledRequestIsFreedBeforeACoroutineHandlerRuns) {
  StartServer();
  auto channel = NewChannel();
  TestService::Stub stub(channel);
  ExpectFreedBeforeTheHandler({64 * 1024, 1024 * 1024},
                              [&](ClientContext& context, const SimpleRequest& request,
                                  SimpleResponse& response) {
                                return stub.CacheableUnaryCall(context, request, &response);
                              });
}

TEST_P(RequestBuffersTest, SmallRequestIsFreedBeforeTheHandlerRuns) {
  StartServer();
  auto channel = NewChannel();
  TestService::Stub stub(channel);
  // Warm up: the connection exists and its caches are filled.
  {
    ClientContext context;
    SimpleRequest request;
    SimpleResponse response;
    ASSERT_TRUE(stub.UnaryCall(context, request, &response).ok());
  }
  DrainBoth();
  const int64_t small_before = SmallBlocksOutstanding();
  ClientContext context;
  const SimpleRequest request = RequestOfSize(600);  // copied into a small block on receipt
  SimpleResponse response;
  ASSERT_TRUE(stub.UnaryCall(context, request, &response).ok());
  const PoolSnapshot s = service_.snapshot();
  EXPECT_EQ(s.request_body, request.payload().body().size());
  // The count is process-wide: the client's own copy of the request (one small block, kept for
  // a transparent retry until the response begins) is out too; the server's must not be.
  EXPECT_LE(s.small_out, small_before + 1) << "the request's small block was still out";
}

TEST_P(RequestBuffersTest, RejectedRequestIsFreedWithoutAHandler) {
  auto interceptor = std::make_shared<RejectingInterceptor>(server_pool_);
  StartServer(interceptor);
  auto channel = NewChannel();
  TestService::Stub stub(channel);
  const int64_t small_before = SmallBlocksOutstanding();
  for (size_t size : {size_t{600}, size_t{64 * 1024}, size_t{1024 * 1024}}) {
    ClientContext context;
    const SimpleRequest request = RequestOfSize(size);
    SimpleResponse response;
    const Status status = stub.UnaryCall(context, request, &response);
    EXPECT_EQ(status.code(), StatusCode::kUnauthenticated) << status;
    EXPECT_EQ(status.message(), "no credentials");
    ASSERT_TRUE(interceptor->ended());
    // Freed by the time the status is decided: at most the read block being processed (and
    // the staging block of frames being written).
    EXPECT_LE(interceptor->end_stats().blocks_out, 2u) << size;
    EXPECT_LE(interceptor->end_stats().bytes_out, max_read_block_) << size;
    DrainBoth();
    EXPECT_EQ(server_pool_.Stats().blocks_out, 0u) << size;
    EXPECT_LE(SmallBlocksOutstanding(), small_before) << size;
  }
  EXPECT_FALSE(service_.snapshot().taken) << "a rejected call reached its handler";
  channel.reset();
  server_.reset();
  DrainBoth();  // in-process, the last frames the server wrote are let go on the client's side
  EXPECT_EQ(server_pool_.CheckAndReset(), "");
}

TEST_P(RequestBuffersTest, QueuedStreamMessagesAreFreedWhenTheStreamEnds) {
  if (GetParam() == Transport::kInProcess) {
    GTEST_SKIP() << "in-process, queued messages are views of the client's blocks, not of "
                    "server read blocks (in_process_test covers freeing on cancel)";
  }
  StartServer();
  auto channel = NewChannel();
  TestService::Stub stub(channel);
  DrainServer();
  ASSERT_EQ(server_pool_.Stats().blocks_out, 0u);

  ClientContext context;
  StreamingInputCallResponse response;
  auto writer = stub.StreamingInputCall(context, &response);
  StreamingInputCallRequest message;
  message.mutable_payload()->mutable_body()->assign(20 * 1024, 'q');
  ASSERT_TRUE(writer->BlockingWrite(message));
  ASSERT_TRUE(writer->BlockingWrite(message));
  // The handler never reads: the messages wait in the call's queue, pinning read blocks.
  // (Drained first so that a read in progress does not count.)
  ASSERT_TRUE(WaitFor([this] {
    DrainServer();
    return server_pool_.Stats().bytes_out >= 40 * 1024;
  }));

  context.TryCancel();
  EXPECT_EQ(writer->BlockingFinish().code(), StatusCode::kCancelled);
  ASSERT_TRUE(service_.stream_handler_done.WaitForNotification());
  DrainServer();
  EXPECT_EQ(server_pool_.Stats().blocks_out, 0u) << "queued messages outlived their stream";
  writer.reset();
}

INSTANTIATE_TEST_SUITE_P(Transports, RequestBuffersTest,
                         kAllTransports, TransportParamName);
INSTANTIATE_TEST_SUITE_P(InProcess, RequestBuffersTest, kInProcessTransport, TransportParamName);

}  // namespace
}  // namespace rill::test
