// Server reflection (v1 and v1alpha) served by rill and asked by rill's client: listing, files
// by name and by symbol with their imports, extensions, NOT_FOUND answers that leave the stream
// usable, and a stream of thousands of requests whose memory stays flat.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "grpc/health/v1/health.rill.h"
#include "grpc/reflection/v1/reflection.rill.h"
#include "grpc/reflection/v1alpha/reflection.rill.h"
#include "grpc/testing/test.rill.h"
#include "reflection_test/extensions.rill.h"
#include "rill/channel.h"
#include "rill/client_context.h"
#include "rill/server.h"
#include "rill/services/admin.h"

namespace rill {
namespace {

namespace pb = google::protobuf;
namespace v1 = ::grpc::reflection::v1;
namespace v1alpha = ::grpc::reflection::v1alpha;

constexpr auto kTimeout = std::chrono::seconds(60);  // only a hang reaches it

class TestServiceImpl final : public ::grpc::testing::TestService::Service {};
class ExtendedImpl final : public ::reflection_test::Extended::Service {};

// One reflection stream of either version.
template <typename Stub, typename Request, typename Response>
class Stream {
 public:
  explicit Stream(const std::shared_ptr<Channel>& channel) : stub_(channel) {
    context_.set_timeout(kTimeout);
    stream_ = stub_.ServerReflectionInfo(context_);
  }
  ~Stream() {
    if (stream_ != nullptr) {
      stream_->BlockingWritesDone();
      EXPECT_TRUE(stream_->BlockingFinish().ok());
    }
  }

  Response Ask(const Request& request) {
    Response response;
    EXPECT_TRUE(stream_->BlockingWrite(request));
    EXPECT_TRUE(stream_->BlockingRead(&response));
    return response;
  }
  bool Write(const Request& request) { return stream_->BlockingWrite(request); }
  bool Read(Response* response) { return stream_->BlockingRead(response); }

 private:
  Stub stub_;
  ClientContext context_;
  std::unique_ptr<ClientReaderWriter<Request, Response>> stream_;
};

using V1Stream =
    Stream<v1::ServerReflection::Stub, v1::ServerReflectionRequest, v1::ServerReflectionResponse>;
using V1AlphaStream = Stream<v1alpha::ServerReflection::Stub, v1alpha::ServerReflectionRequest,
                             v1alpha::ServerReflectionResponse>;

class ReflectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", &port_).SetReactorCount(1);
    builder.RegisterService(&test_service_);
    AddAdminServices(builder);
    // Registered after the admin bundle: reflection still sees it.
    builder.RegisterService(&extended_);
    auto server = builder.Build();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    auto channel = Channel::Create("127.0.0.1:" + std::to_string(port_));
    ASSERT_TRUE(channel.ok());
    channel_ = *channel;
  }
  void TearDown() override {
    channel_.reset();
    server_.reset();
  }

  TestServiceImpl test_service_;
  ExtendedImpl extended_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Channel> channel_;
  int port_ = 0;
};

// The names of the files in a file descriptor response, in order.
template <typename Response>
std::vector<std::string> FileNames(const Response& response) {
  std::vector<std::string> names;
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    pb::FileDescriptorProto file;
    EXPECT_TRUE(file.ParseFromString(bytes));
    names.push_back(file.name());
  }
  return names;
}

// Loads every file of a response into `database`; false if one does not parse.
template <typename Response>
bool AddFiles(const Response& response, pb::SimpleDescriptorDatabase& database) {
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    pb::FileDescriptorProto file;
    if (!file.ParseFromString(bytes)) return false;
    // The same file may come in several responses; the database keeps one.
    pb::FileDescriptorProto known;
    if (database.FindFileByName(file.name(), &known)) continue;
    if (!database.Add(file)) return false;
  }
  return true;
}

TEST(GeneratedServiceTest, RecordsItsDescriptor) {
  TestServiceImpl service;
  ASSERT_NE(service.descriptor(), nullptr);
  EXPECT_EQ(service.descriptor()->full_name(), "grpc.testing.TestService");
  EXPECT_EQ(service.descriptor()->file()->name(), "grpc/testing/test.proto");
}

TEST_F(ReflectionTest, ListsEveryRegisteredService) {
  V1Stream stream(channel_);
  v1::ServerReflectionRequest request;
  request.set_host("localhost");
  request.set_list_services("");
  v1::ServerReflectionResponse response = stream.Ask(request);
  EXPECT_EQ(response.valid_host(), "localhost");
  EXPECT_EQ(response.original_request().list_services(), "");
  ASSERT_TRUE(response.has_list_services_response());
  std::set<std::string> names;
  for (const auto& service : response.list_services_response().service()) {
    names.insert(service.name());
  }
  EXPECT_EQ(names,
            (std::set<std::string>{"grpc.testing.TestService", "grpc.health.v1.Health",
                                   "grpc.reflection.v1.ServerReflection",
                                   "grpc.reflection.v1alpha.ServerReflection",
                                   "grpc.channelz.v1.Channelz", "reflection_test.Extended"}));
}

TEST_F(ReflectionTest, ResolvesEveryServiceAndMessageFromTheFilesItSends) {
  V1Stream stream(channel_);
  v1::ServerReflectionRequest request;
  request.set_list_services("");
  const v1::ServerReflectionResponse list = stream.Ask(request);

  pb::SimpleDescriptorDatabase database;
  for (const auto& service : list.list_services_response().service()) {
    request.set_file_containing_symbol(service.name());
    const v1::ServerReflectionResponse files = stream.Ask(request);
    ASSERT_TRUE(files.has_file_descriptor_response()) << service.name();
    ASSERT_TRUE(AddFiles(files, database)) << service.name();
  }
  pb::DescriptorPool pool(&database);
  int messages = 0;
  for (const auto& service : list.list_services_response().service()) {
    const pb::ServiceDescriptor* descriptor = pool.FindServiceByName(service.name());
    ASSERT_NE(descriptor, nullptr) << service.name();
    for (int i = 0; i < descriptor->method_count(); ++i) {
      ASSERT_NE(descriptor->method(i)->input_type(), nullptr);
      ASSERT_NE(descriptor->method(i)->output_type(), nullptr);
      // Every message the method carries, and the messages inside them, are known.
      std::vector<const pb::Descriptor*> pending = {descriptor->method(i)->input_type(),
                                                    descriptor->method(i)->output_type()};
      while (!pending.empty()) {
        const pb::Descriptor* message = pending.back();
        pending.pop_back();
        ++messages;
        for (int f = 0; f < message->field_count(); ++f) {
          if (message->field(f)->message_type() != nullptr) {
            pending.push_back(message->field(f)->message_type());
          }
        }
      }
    }
  }
  EXPECT_GT(messages, 20);
  EXPECT_NE(pool.FindMessageTypeByName("grpc.testing.StreamingOutputCallRequest"), nullptr);
}

TEST_F(ReflectionTest, FileByNameComesWithItsImports) {
  V1Stream stream(channel_);
  v1::ServerReflectionRequest request;
  request.set_file_by_filename("grpc/testing/test.proto");
  const v1::ServerReflectionResponse response = stream.Ask(request);
  const std::vector<std::string> names = FileNames(response);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "grpc/testing/test.proto");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            (std::set<std::string>{"grpc/testing/test.proto", "grpc/testing/empty.proto",
                                   "grpc/testing/messages.proto"}));
  EXPECT_EQ(names.size(), 3u);
}

TEST_F(ReflectionTest, SymbolsOfEveryKindFindTheirFile) {
  V1Stream stream(channel_);
  v1::ServerReflectionRequest request;
  for (const char* symbol :
       {"grpc.testing.TestService", "grpc.testing.TestService.UnaryCall",
        "grpc.testing.SimpleRequest", "grpc.testing.SimpleRequest.response_size",
        "grpc.testing.PayloadType", "grpc.testing.COMPRESSABLE"}) {
    request.set_file_containing_symbol(symbol);
    const v1::ServerReflectionResponse response = stream.Ask(request);
    const std::vector<std::string> names = FileNames(response);
    ASSERT_FALSE(names.empty()) << symbol << ": " << response.ShortDebugString();
    EXPECT_TRUE(names[0] == "grpc/testing/test.proto" || names[0] == "grpc/testing/messages.proto")
        << symbol << " -> " << names[0];
  }
}

TEST_F(ReflectionTest, ExtensionQueries) {
  V1Stream stream(channel_);
  v1::ServerReflectionRequest request;
  request.set_all_extension_numbers_of_type("reflection_test.Base");
  v1::ServerReflectionResponse response = stream.Ask(request);
  ASSERT_TRUE(response.has_all_extension_numbers_response()) << response.ShortDebugString();
  EXPECT_EQ(response.all_extension_numbers_response().base_type_name(), "reflection_test.Base");
  std::set<int> numbers(response.all_extension_numbers_response().extension_number().begin(),
                        response.all_extension_numbers_response().extension_number().end());
  EXPECT_EQ(numbers, (std::set<int>{100, 123}));

  request.mutable_file_containing_extension()->set_containing_type("reflection_test.Base");
  request.mutable_file_containing_extension()->set_extension_number(123);
  response = stream.Ask(request);
  EXPECT_EQ(FileNames(response), (std::vector<std::string>{"reflection_test/extensions.proto"}));

  request.mutable_file_containing_extension()->set_extension_number(150);
  response = stream.Ask(request);
  ASSERT_TRUE(response.has_error_response());
  EXPECT_EQ(response.error_response().error_code(), static_cast<int>(StatusCode::kNotFound));

  request.set_all_extension_numbers_of_type("reflection_test.Nope");
  response = stream.Ask(request);
  ASSERT_TRUE(response.has_error_response());
  EXPECT_EQ(response.error_response().error_code(), static_cast<int>(StatusCode::kNotFound));
}

TEST_F(ReflectionTest, UnknownNamesAreNotFoundAndTheStreamGoesOn) {
  V1Stream stream(channel_);
  v1::ServerReflectionRequest request;
  request.set_file_containing_symbol("no.such.Symbol");
  v1::ServerReflectionResponse response = stream.Ask(request);
  ASSERT_TRUE(response.has_error_response());
  EXPECT_EQ(response.error_response().error_code(), static_cast<int>(StatusCode::kNotFound));
  EXPECT_EQ(response.original_request().file_containing_symbol(), "no.such.Symbol");

  request.set_file_by_filename("no/such/file.proto");
  response = stream.Ask(request);
  ASSERT_TRUE(response.has_error_response());
  EXPECT_EQ(response.error_response().error_code(), static_cast<int>(StatusCode::kNotFound));

  request.Clear();  // asks for nothing
  response = stream.Ask(request);
  ASSERT_TRUE(response.has_error_response());
  EXPECT_EQ(response.error_response().error_code(), static_cast<int>(StatusCode::kInvalidArgument));

  request.set_file_by_filename("grpc/testing/empty.proto");
  response = stream.Ask(request);
  EXPECT_EQ(FileNames(response), (std::vector<std::string>{"grpc/testing/empty.proto"}));
}

TEST_F(ReflectionTest, V1AlphaAnswersTheSame) {
  V1AlphaStream stream(channel_);
  v1alpha::ServerReflectionRequest request;
  request.set_list_services("");
  v1alpha::ServerReflectionResponse response = stream.Ask(request);
  EXPECT_EQ(response.list_services_response().service_size(), 6);
  request.set_file_containing_symbol("grpc.testing.TestService");
  response = stream.Ask(request);
  EXPECT_EQ(FileNames(response).size(), 3u);
  request.set_file_containing_symbol("no.such.Symbol");
  response = stream.Ask(request);
  EXPECT_EQ(response.error_response().error_code(), static_cast<int>(StatusCode::kNotFound));
}

// Heap bytes in use in this process (server and client both).
size_t HeapInUse() { return mallinfo2().uordblks; }

TEST_F(ReflectionTest, ThousandsOfRequestsOnOneStreamKeepMemoryFlat) {
  // Fixed 64 KiB windows: with windows grown to the bandwidth-delay product, a client reading
  // slower than the server answers legitimately holds megabytes of responses in flight, which
  // would hide what this test looks for (the service keeping per-request state).
  ChannelOptions options;
  options.initial_stream_window = 65535;
  options.initial_connection_window = 65535;
  auto channel = Channel::Create("127.0.0.1:" + std::to_string(port_), options);
  ASSERT_TRUE(channel.ok());
  V1Stream stream(*channel);
  v1::ServerReflectionRequest request;
  request.set_file_containing_symbol("grpc.testing.TestService");
  constexpr int kWarmUp = 1000;
  constexpr int kRequests = 10000;
  // Written from another thread while this one reads: the client never holds many responses.
  std::jthread writer([&] {
    for (int i = 0; i < kWarmUp + kRequests; ++i) {
      if (!stream.Write(request)) return;
    }
  });
  v1::ServerReflectionResponse response;
  size_t bytes_per_response = 0;
  size_t in_use_after_warm_up = 0;
  for (int i = 0; i < kWarmUp + kRequests; ++i) {
    ASSERT_TRUE(stream.Read(&response)) << i;
    ASSERT_EQ(response.file_descriptor_response().file_descriptor_proto_size(), 3) << i;
    if (i == kWarmUp - 1) {
      bytes_per_response = response.ByteSizeLong();
      in_use_after_warm_up = HeapInUse();
    }
  }
  const size_t in_use = HeapInUse();
  // Kept responses would take kRequests * bytes_per_response (tens of MiB); a flat stream grows
  // by at most a few responses' worth of allocator slack.
  const size_t growth = in_use > in_use_after_warm_up ? in_use - in_use_after_warm_up : 0;
  EXPECT_LT(growth, 100 * bytes_per_response)
      << "heap grew by " << growth << " bytes over " << kRequests << " requests of "
      << bytes_per_response << " bytes";
}

}  // namespace
}  // namespace rill
