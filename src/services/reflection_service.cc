#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grpc/reflection/v1/reflection.rill.h"
#include "grpc/reflection/v1alpha/reflection.rill.h"
#include "rill/server.h"
#include "rill/server_stream.h"
#include "rill/services/reflection.h"

namespace rill {
namespace {

namespace pb = google::protobuf;
using FileProtos = pb::RepeatedPtrField<std::string>;

// What reflection knows: the registered services and the pools their descriptors live in.
// Written once by OnBuild() before the server serves, then only read (from every reactor).
class Catalog {
 public:
  void Load(const std::vector<Service*>& services) {
    for (const Service* service : services) {
      service_names_.push_back(service->name());
      const pb::ServiceDescriptor* descriptor = service->descriptor();
      if (descriptor == nullptr) continue;
      const pb::DescriptorPool* pool = descriptor->file()->pool();
      if (std::find(pools_.begin(), pools_.end(), pool) == pools_.end()) pools_.push_back(pool);
    }
  }

  [[nodiscard]] const std::vector<std::string>& service_names() const { return service_names_; }

  // The file named `name` and every file it imports, directly or not.
  Status FileByName(const std::string& name, FileProtos& out) const {
    for (const pb::DescriptorPool* pool : pools_) {
      if (const pb::FileDescriptor* file = pool->FindFileByName(name)) {
        AddWithImports(file, out);
        return Status();
      }
    }
    return Status(StatusCode::kNotFound, "file not found: " + name);
  }

  // The file that defines `symbol` (a package-qualified service, method, message, field, enum,
  // enum value or extension name), with its imports.
  Status FileContainingSymbol(const std::string& symbol, FileProtos& out) const {
    for (const pb::DescriptorPool* pool : pools_) {
      if (const pb::FileDescriptor* file = pool->FindFileContainingSymbol(symbol)) {
        AddWithImports(file, out);
        return Status();
      }
    }
    return Status(StatusCode::kNotFound, "symbol not found: " + symbol);
  }

  // The file that defines extension `number` of message `type`, with its imports.
  Status FileContainingExtension(const std::string& type, int number, FileProtos& out) const {
    for (const pb::DescriptorPool* pool : pools_) {
      const pb::Descriptor* message = pool->FindMessageTypeByName(type);
      if (message == nullptr) continue;
      if (const pb::FieldDescriptor* extension = pool->FindExtensionByNumber(message, number)) {
        AddWithImports(extension->file(), out);
        return Status();
      }
      return Status(StatusCode::kNotFound,
                    "extension " + std::to_string(number) + " of " + type + " not found");
    }
    return Status(StatusCode::kNotFound, "message type not found: " + type);
  }

  // The numbers of the extensions of message `type` that the pool knows.
  Status ExtensionNumbers(const std::string& type, pb::RepeatedField<int32_t>& out) const {
    for (const pb::DescriptorPool* pool : pools_) {
      const pb::Descriptor* message = pool->FindMessageTypeByName(type);
      if (message == nullptr) continue;
      std::vector<const pb::FieldDescriptor*> extensions;
      pool->FindAllExtensions(message, &extensions);
      for (const pb::FieldDescriptor* extension : extensions) out.Add(extension->number());
      return Status();
    }
    return Status(StatusCode::kNotFound, "message type not found: " + type);
  }

 private:
  // `file` first, then its imports depth first, each file once.
  static void AddWithImports(const pb::FileDescriptor* file, FileProtos& out) {
    std::set<const pb::FileDescriptor*> seen;
    std::vector<const pb::FileDescriptor*> pending = {file};
    pb::FileDescriptorProto proto;
    while (!pending.empty()) {
      const pb::FileDescriptor* next = pending.back();
      pending.pop_back();
      if (!seen.insert(next).second) continue;
      proto.Clear();
      next->CopyTo(&proto);
      proto.SerializeToString(out.Add());
      for (int i = next->dependency_count() - 1; i >= 0; --i)
        pending.push_back(next->dependency(i));
    }
  }

  std::vector<std::string> service_names_;
  std::vector<const pb::DescriptorPool*> pools_;
};

// One response for one request; the same for both versions, whose messages differ only in
// their package.
template <typename Request, typename Response>
void Answer(const Catalog& catalog, const Request& request, Response& response) {
  response.set_valid_host(request.host());
  *response.mutable_original_request() = request;
  Status status;
  switch (request.message_request_case()) {
    case Request::kFileByFilename:
      status = catalog.FileByName(
          request.file_by_filename(),
          *response.mutable_file_descriptor_response()->mutable_file_descriptor_proto());
      break;
    case Request::kFileContainingSymbol:
      status = catalog.FileContainingSymbol(
          request.file_containing_symbol(),
          *response.mutable_file_descriptor_response()->mutable_file_descriptor_proto());
      break;
    case Request::kFileContainingExtension:
      status = catalog.FileContainingExtension(
          request.file_containing_extension().containing_type(),
          request.file_containing_extension().extension_number(),
          *response.mutable_file_descriptor_response()->mutable_file_descriptor_proto());
      break;
    case Request::kAllExtensionNumbersOfType: {
      auto* numbers = response.mutable_all_extension_numbers_response();
      numbers->set_base_type_name(request.all_extension_numbers_of_type());
      status = catalog.ExtensionNumbers(request.all_extension_numbers_of_type(),
                                        *numbers->mutable_extension_number());
      break;
    }
    case Request::kListServices: {
      auto* list = response.mutable_list_services_response();
      for (const std::string& name : catalog.service_names()) list->add_service()->set_name(name);
      break;
    }
    default:
      status = Status(StatusCode::kInvalidArgument, "the request asks for nothing");
      break;
  }
  if (!status.ok()) {
    auto* error = response.mutable_error_response();
    error->set_error_code(static_cast<int>(status.code()));
    error->set_error_message(std::string(status.message()));
  }
}

// The stream: one request in, one response out, until the client half-closes. The request and
// response are reused, so a stream's memory does not grow with the number of requests.
// Both outlive the call: the catalog belongs to the server, the stream to the call's handler.
template <typename Request, typename Response>
Awaitable<Status> Serve(const Catalog* catalog, ServerReaderWriter<Response, Request>* stream) {
  auto request = std::make_unique<Request>();
  auto response = std::make_unique<Response>();
  while (true) {
    request->Clear();
    if (!co_await stream->Read(request.get())) break;
    response->Clear();
    Answer(*catalog, *request, *response);
    if (!co_await stream->Write(*response)) break;
  }
  co_return Status();
}

namespace v1 = ::grpc::reflection::v1;
namespace v1alpha = ::grpc::reflection::v1alpha;

class V1Service final : public v1::ServerReflection::Service {
 public:
  explicit V1Service(const Catalog* catalog) : catalog_(catalog) {}
  Awaitable<Status> ServerReflectionInfo(
      ServerContext& /*context*/,
      ServerReaderWriter<v1::ServerReflectionResponse, v1::ServerReflectionRequest>& stream)
      override {
    return Serve(catalog_, &stream);
  }

 private:
  const Catalog* catalog_;
};

class V1AlphaService final : public v1alpha::ServerReflection::Service {
 public:
  explicit V1AlphaService(const Catalog* catalog) : catalog_(catalog) {}
  Awaitable<Status> ServerReflectionInfo(
      ServerContext& /*context*/,
      ServerReaderWriter<v1alpha::ServerReflectionResponse, v1alpha::ServerReflectionRequest>&
          stream) override {
    return Serve(catalog_, &stream);
  }

 private:
  const Catalog* catalog_;
};

class ReflectionPlugin final : public ServerPlugin {
 public:
  void OnBuild(const std::vector<Service*>& services) override { catalog_.Load(services); }

  Catalog catalog_;
  V1Service v1_{&catalog_};
  V1AlphaService v1alpha_{&catalog_};
};

}  // namespace

void AddReflectionService(ServerBuilder& builder) {
  auto plugin = std::make_shared<ReflectionPlugin>();
  builder.RegisterService(&plugin->v1_);
  builder.RegisterService(&plugin->v1alpha_);
  builder.AddPlugin(std::move(plugin));
}

}  // namespace rill
