#include "tools/rill_cli/reflection_database.h"

#include <google/protobuf/descriptor.pb.h>

#include <utility>

namespace rill::cli {
namespace {

// The two versions' messages are the same on the wire; only the method's path differs.
constexpr MethodDescriptor kV1{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                               RpcKind::kBidiStreaming};
constexpr MethodDescriptor kV1Alpha{
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", RpcKind::kBidiStreaming};

}  // namespace

StatusOr<std::unique_ptr<ReflectionDatabase>> ReflectionDatabase::Connect(
    std::shared_ptr<Channel> channel, const Metadata& metadata, Clock::time_point deadline) {
  Status failure;
  for (const MethodDescriptor* method : {&kV1, &kV1Alpha}) {
    std::unique_ptr<ReflectionDatabase> database(new ReflectionDatabase());
    database->channel_ = channel;
    database->version_ = method == &kV1 ? "v1" : "v1alpha";
    database->context_ = std::make_unique<ClientContext>();
    database->context_->set_deadline(deadline);
    for (const auto& [key, value] : metadata) database->context_->AddMetadata(key, value);
    database->stream_ =
        std::make_unique<Stream>(detail::StartClientStream(*channel, *method, *database->context_));

    Request request;
    request.set_list_services("");
    Response response;
    if (database->stream_->BlockingWrite(request) && database->stream_->BlockingRead(&response)) {
      if (response.has_error_response()) {
        return Status(StatusCodeFromInt(response.error_response().error_code()),
                      response.error_response().error_message());
      }
      for (const auto& service : response.list_services_response().service()) {
        database->services_.push_back(service.name());
      }
      return database;
    }
    failure = database->stream_->BlockingFinish();
    if (failure.ok()) failure = Status(StatusCode::kInternal, "the reflection stream ended");
    database->stream_.reset();
    if (failure.code() != StatusCode::kUnimplemented) break;
  }
  return failure;
}

ReflectionDatabase::~ReflectionDatabase() {
  if (stream_ != nullptr && !broken_) {
    stream_->BlockingWritesDone();
    static_cast<void>(stream_->BlockingFinish());
  }
}

bool ReflectionDatabase::Ask(const Request& request, Response* response) {
  if (broken_) return false;
  if (!stream_->BlockingWrite(request) || !stream_->BlockingRead(response)) {
    broken_ = true;
    last_error_ = stream_->BlockingFinish();
    if (last_error_.ok())
      last_error_ = Status(StatusCode::kInternal, "the reflection stream ended");
    return false;
  }
  if (response->has_error_response()) {
    last_error_ = Status(StatusCodeFromInt(response->error_response().error_code()),
                         response->error_response().error_message());
    return false;
  }
  if (!response->has_file_descriptor_response() ||
      response->file_descriptor_response().file_descriptor_proto_size() == 0) {
    last_error_ = Status(StatusCode::kInternal, "the server answered with no files");
    return false;
  }
  return AddFiles(*response);
}

bool ReflectionDatabase::AddFiles(const Response& response) {
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    if (!file.ParseFromString(bytes)) {
      last_error_ =
          Status(StatusCode::kInternal, "the server sent a file descriptor that does not parse");
      return false;
    }
    if (!cached_files_.insert(file.name()).second) continue;
    if (!cache_.AddAndOwn(new google::protobuf::FileDescriptorProto(std::move(file)))) {
      last_error_ = Status(StatusCode::kInternal, "the server sent conflicting file descriptors");
      return false;
    }
  }
  return true;
}

bool ReflectionDatabase::FindFileByName(const std::string& filename,
                                        google::protobuf::FileDescriptorProto* output) {
  if (cache_.FindFileByName(filename, output)) return true;
  Request request;
  request.set_file_by_filename(filename);
  Response response;
  return Ask(request, &response) && cache_.FindFileByName(filename, output);
}

bool ReflectionDatabase::FindFileContainingSymbol(const std::string& symbol_name,
                                                  google::protobuf::FileDescriptorProto* output) {
  if (cache_.FindFileContainingSymbol(symbol_name, output)) return true;
  Request request;
  request.set_file_containing_symbol(symbol_name);
  Response response;
  if (!Ask(request, &response)) return false;
  // The first file of the response is the one that defines the symbol.
  return output->ParseFromString(response.file_descriptor_response().file_descriptor_proto(0));
}

bool ReflectionDatabase::FindFileContainingExtension(
    const std::string& containing_type, int field_number,
    google::protobuf::FileDescriptorProto* output) {
  if (cache_.FindFileContainingExtension(containing_type, field_number, output)) return true;
  Request request;
  request.mutable_file_containing_extension()->set_containing_type(containing_type);
  request.mutable_file_containing_extension()->set_extension_number(field_number);
  Response response;
  if (!Ask(request, &response)) return false;
  return output->ParseFromString(response.file_descriptor_response().file_descriptor_proto(0));
}

}  // namespace rill::cli
