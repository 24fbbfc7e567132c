// rill's asynchronous operations take any Asio completion token and honour what the handler
// carries: its cancellation slot (per-operation cancellation cancels the RPC with CANCELLED),
// its associated executor (the completion runs there) and its associated allocator.
#include <gtest/gtest.h>

#include <asio/bind_allocator.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <variant>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/reactor_pool.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;

// Unary and bidi handlers that wait until their call is cancelled (or 20 s pass), and a
// client-streaming handler that counts messages.
class ParkingService final : public TestService::Service {
 public:
  Awaitable<Status> UnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                   SimpleResponse& response) override {
    started.Notify();
    asio::steady_timer timer(context.io_context(), std::chrono::seconds(20));
    asio::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (context.IsCancelled()) cancelled.Notify();
    co_return Status();
  }

  Awaitable<Status> FullDuplexCall(ServerContext& context,
                                   FullDuplexServerStream& stream) override {
    started.Notify();
    StreamingOutputCallRequest request;
    while (co_await stream.Read(&request)) {
    }
    if (context.IsCancelled()) cancelled.Notify();
    co_return Status();
  }

  Awaitable<Status> StreamingInputCall(ServerContext& context,
                                       ServerReader<StreamingInputCallRequest>& reader,
                                       StreamingInputCallResponse& response) override {
    StreamingInputCallRequest request;
    int size = 0;
    while (co_await reader.Read(&request)) size += request.payload().body().size();
    response.set_aggregated_payload_size(size);
    co_return Status();
  }

  Notification started;
  Notification cancelled;
};

class CompletionTokenTest : public ServerTest<ParkingService> {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServer(Transport::kTcp));
    OpenChannel();
  }
  void TearDown() override {
    stub_.reset();
    channel_.reset();
    if (server_ != nullptr) server_->Stop();
  }
};

// `call || timer`: when the timer wins, the awaitable operator cancels the call through its
// slot; the call must complete promptly with CANCELLED and the server must see it.
TEST_F(CompletionTokenTest, CallLosingARaceWithATimerIsCancelled) {
  using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)
  asio::io_context io;
  auto race = [](TestService::Stub* stub) -> Awaitable<std::pair<size_t, Status>> {
    ClientContext ctx;
    SimpleRequest request;
    SimpleResponse response;
    asio::steady_timer timer(co_await asio::this_coro::executor, milliseconds(100));
    auto result = co_await (stub->UnaryCall(ctx, request, &response, asio::use_awaitable) ||
                            timer.async_wait(asio::use_awaitable));
    Status call_status;
    if (result.index() == 0) call_status = std::get<0>(result);
    co_return std::make_pair(result.index(), call_status);
  };
  auto future = asio::co_spawn(io, race(stub_.get()), asio::use_future);
  std::thread runner([&io] { io.run(); });
  const bool prompt = future.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!prompt) {
    // The call ignored the cancellation: let the server release it so the test can end.
    server_->Stop();
  }
  runner.join();
  ASSERT_TRUE(prompt) << "the call ignored its cancellation slot";
  EXPECT_EQ(future.get().first, 1u) << "the timer should have won";
  EXPECT_TRUE(service_.cancelled.WaitForNotification());
}

TEST_F(CompletionTokenTest, CancellationSignalCancelsAStreamRead) {
  ClientContext ctx;
  auto stream = stub_->FullDuplexCall(ctx);
  ASSERT_TRUE(service_.started.WaitForNotification());
  asio::cancellation_signal signal;
  std::promise<bool> read;
  StreamingOutputCallResponse response;
  stream->Read(&response, asio::bind_cancellation_slot(
                              signal.slot(), [&read](bool ok) { read.set_value(ok); }));
  // The signal is emitted from another thread than the channel's reactor, as a user would.
  signal.emit(asio::cancellation_type::terminal);
  auto result = read.get_future();
  ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_FALSE(result.get());
  const Status status = stream->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status;
  EXPECT_TRUE(service_.cancelled.WaitForNotification());
  stream.reset();
}

TEST_F(CompletionTokenTest, CompletionRunsOnItsAssociatedExecutor) {
  asio::io_context other;
  auto guard = asio::make_work_guard(other);
  std::thread other_thread([&other] { other.run(); });
  ClientContext ctx;
  std::promise<std::thread::id> ran_on;
  auto stream = stub_->FullDuplexCall(ctx);
  StreamingOutputCallRequest request;
  stream->Write(request, WriteOptions{},
                asio::bind_executor(other, [&ran_on](bool) {
                  ran_on.set_value(std::this_thread::get_id());
                }));
  EXPECT_EQ(ran_on.get_future().get(), other_thread.get_id());
  ctx.TryCancel();
  stream->BlockingFinish().IgnoreError();
  stream.reset();
  guard.reset();
  other_thread.join();
}

// An allocator that counts what it hands out, bound to a handler too large to be stored
// inline: the operation must take the handler's memory from it.
template <typename T>
struct CountingAllocator {
  using value_type = T;
  explicit CountingAllocator(std::atomic<int>* count) : count(count) {}
  template <typename U>
  CountingAllocator(const CountingAllocator<U>& other) : count(other.count) {}  // NOLINT
  T* allocate(size_t n) {
    count->fetch_add(1);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) { std::allocator<T>().deallocate(p, n); }
  bool operator==(const CountingAllocator& other) const { return count == other.count; }
  std::atomic<int>* count;
};

TEST_F(CompletionTokenTest, LargeHandlerUsesItsAssociatedAllocator) {
  std::atomic<int> allocations{0};
  ClientContext ctx;
  SimpleRequest request;
  SimpleResponse response;
  std::promise<Status> done;
  struct Big {
    char bytes[512] = {};
  } big;
  stub_->UnaryCall(ctx, request, &response,
                   asio::bind_allocator(CountingAllocator<void>(&allocations),
                                        [&done, big](Status status) {
                                          (void)big;
                                          done.set_value(std::move(status));
                                        }));
  // The server parks unary calls: cancel to finish.
  ASSERT_TRUE(service_.started.WaitForNotification());
  ctx.TryCancel();
  EXPECT_EQ(done.get_future().get().code(), StatusCode::kCancelled);
  EXPECT_GT(allocations.load(), 0) << "the handler's associated allocator was not used";
}

TEST_F(CompletionTokenTest, ClientWriterFinishTakesAnyToken) {
  StreamingInputCallRequest request;
  request.mutable_payload()->set_body("abcd");
  {
    ClientContext ctx;
    StreamingInputCallResponse response;
    auto writer = stub_->StreamingInputCall(ctx, &response);
    ASSERT_TRUE(writer->BlockingWrite(request));
    std::future<Status> finished = writer->Finish(asio::use_future);
    EXPECT_TRUE(finished.get().ok());
    EXPECT_EQ(response.aggregated_payload_size(), 4);
  }
  {
    ClientContext ctx;
    StreamingInputCallResponse response;
    auto writer = stub_->StreamingInputCall(ctx, &response);
    ASSERT_TRUE(writer->BlockingWrite(request));
    ASSERT_TRUE(writer->BlockingWrite(request));
    std::promise<Status> finished;
    writer->Finish([&finished](Status status) { finished.set_value(std::move(status)); });
    EXPECT_TRUE(finished.get_future().get().ok());
    EXPECT_EQ(response.aggregated_payload_size(), 8);
  }
}

}  // namespace
}  // namespace rill::test
