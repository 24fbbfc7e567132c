// ReflectionDatabase: a protobuf DescriptorDatabase whose files come from a server's reflection
// service, over one reflection stream (grpc.reflection.v1, or v1alpha for servers without v1).
//
//   auto database = ReflectionDatabase::Connect(channel, deadline);
//   if (!database.ok()) return Fail(database.status());
//   google::protobuf::DescriptorPool pool(database->get());
//   const auto* method = pool.FindMethodByName("helloworld.Greeter.SayHello");
//
// Files received are kept, so each is asked for once. Lookups block on the stream.
//
// Thread safety: thread-compatible (one pool on one thread uses it).
#ifndef RILL_TOOLS_RILL_CLI_REFLECTION_DATABASE_H_
#define RILL_TOOLS_RILL_CLI_REFLECTION_DATABASE_H_

#include <google/protobuf/descriptor_database.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "grpc/reflection/v1/reflection.pb.h"
#include "rill/channel.h"
#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/status_or.h"

namespace rill::cli {

class ReflectionDatabase final : public google::protobuf::DescriptorDatabase {
 public:
  using Clock = std::chrono::steady_clock;
  using Metadata = std::vector<std::pair<std::string, std::string>>;

  // Opens the stream (v1 first; v1alpha when the server answers v1 with UNIMPLEMENTED) and asks
  // for the service list. Fails with the stream's status when neither version is served or the
  // server cannot be reached. Every request carries `metadata`; the stream ends at `deadline`.
  static StatusOr<std::unique_ptr<ReflectionDatabase>> Connect(std::shared_ptr<Channel> channel,
                                                               const Metadata& metadata,
                                                               Clock::time_point deadline);
  ~ReflectionDatabase() override;

  // The services the server lists, in its order.
  [[nodiscard]] const std::vector<std::string>& services() const { return services_; }
  // "v1" or "v1alpha".
  [[nodiscard]] std::string_view version() const { return version_; }
  // Why the last lookup failed (the server's error response, or the stream's end).
  [[nodiscard]] const Status& last_error() const { return last_error_; }

  bool FindFileByName(const std::string& filename,
                      google::protobuf::FileDescriptorProto* output) override;
  bool FindFileContainingSymbol(const std::string& symbol_name,
                                google::protobuf::FileDescriptorProto* output) override;
  bool FindFileContainingExtension(const std::string& containing_type, int field_number,
                                   google::protobuf::FileDescriptorProto* output) override;

 private:
  using Request = grpc::reflection::v1::ServerReflectionRequest;
  using Response = grpc::reflection::v1::ServerReflectionResponse;
  using Stream = ClientReaderWriter<Request, Response>;

  ReflectionDatabase() = default;
  // Sends `request`, reads its response. False (with last_error_) on an error response or a
  // broken stream.
  bool Ask(const Request& request, Response* response);
  // Keeps the files of a file descriptor response; false if one does not parse.
  bool AddFiles(const Response& response);

  std::shared_ptr<Channel> channel_;
  std::unique_ptr<ClientContext> context_;
  std::unique_ptr<Stream> stream_;
  bool broken_ = false;
  std::string version_;
  std::vector<std::string> services_;
  google::protobuf::SimpleDescriptorDatabase cache_;
  std::set<std::string> cached_files_;
  Status last_error_;
};

}  // namespace rill::cli

#endif  // RILL_TOOLS_RILL_CLI_REFLECTION_DATABASE_H_
