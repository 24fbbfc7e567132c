#include "src/rpc/call_headers.h"

#include <charconv>

#include "src/rpc/wire_format.h"

namespace rill::internal {

Status AppendMetadata(const Metadata& metadata, HeaderBlock& block, std::string& scratch) {
  for (const auto& [key, value] : metadata) {
    if (!IsValidMetadataKey(key) || IsReservedMetadataKey(key)) {
      return Status(StatusCode::kInternal, "invalid metadata key \"" + std::string(key) + "\"");
    }
    if (IsBinaryMetadataKey(key)) {
      scratch.clear();
      Base64Encode(value, scratch);
      block.Add(key, scratch);
    } else {
      if (!IsValidAsciiMetadataValue(value)) {
        return Status(StatusCode::kInternal,
                      "invalid value for metadata key \"" + std::string(key) + "\"");
      }
      block.Add(key, value);
    }
  }
  return Status();
}

void AppendStatus(const Status& status, HeaderBlock& block, std::string& scratch) {
  char code[4];
  const auto [end, ec] = std::to_chars(code, code + sizeof(code), static_cast<int>(status.code()));
  block.Add("grpc-status", std::string_view(code, static_cast<size_t>(end - code)));
  if (!status.message().empty()) {
    if (IsPercentEncodingFree(status.message())) {
      block.Add("grpc-message", status.message());
    } else {
      scratch.clear();
      PercentEncode(status.message(), scratch);
      block.Add("grpc-message", scratch);
    }
  }
  if (!status.details().empty()) {
    scratch.clear();
    Base64Encode(status.details(), scratch);
    block.Add("grpc-status-details-bin", scratch);
  }
}

bool AddReceivedMetadata(std::string_view name, std::string_view value, Metadata& metadata,
                         std::string& scratch) {
  if (name.empty() || name[0] == ':') return true;
  if (name == "content-type" || name == "te" || name == "grpc-timeout" ||
      name == "grpc-encoding" || name == "grpc-accept-encoding" || name == "grpc-status" ||
      name == "grpc-message" || name == "grpc-status-details-bin" ||
      name == "grpc-message-type") {
    return true;
  }
  if (IsBinaryMetadataKey(name)) {
    scratch.clear();
    if (!Base64Decode(value, scratch)) return false;
    metadata.Add(name, scratch);
    return true;
  }
  metadata.Add(name, value);
  return true;
}

}  // namespace rill::internal
