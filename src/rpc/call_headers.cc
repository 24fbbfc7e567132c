#include "src/rpc/call_headers.h"


#include "src/rpc/wire_format.h"

namespace rill::internal {

namespace {

// Fields that carry credentials stay out of HPACK's dynamic table (RFC 7541 §7.1.3): an
// attacker who can add fields to the same connection could otherwise probe the table for them.
// Binary values are opaque (tokens, trace contexts) and change per call, so indexing them only
// risks the secret without saving bytes.
bool IsSensitiveMetadataKey(std::string_view key) {
  return key == "authorization" || key == "proxy-authorization" || key == "cookie" ||
         key == "set-cookie" || IsBinaryMetadataKey(key);
}

}  // namespace

Status AppendMetadata(const Metadata& metadata, HeaderBlock& block, std::string& scratch) {
  for (const auto& [key, value] : metadata) {
    if (!IsValidMetadataKey(key) || IsReservedMetadataKey(key)) {
      return Status(StatusCode::kInternal, "invalid metadata key \"" + std::string(key) + "\"");
    }
    if (IsBinaryMetadataKey(key)) {
      scratch.clear();
      Base64Encode(value, scratch);
      block.Add(key, scratch, /*never_index=*/true);
    } else {
      if (!IsValidAsciiMetadataValue(value)) {
        return Status(StatusCode::kInternal,
                      "invalid value for metadata key \"" + std::string(key) + "\"");
      }
      block.Add(key, value, IsSensitiveMetadataKey(key));
    }
  }
  return Status();
}

void AppendStatus(const Status& status, HeaderBlock& block, std::string& scratch) {
  static constexpr std::string_view kCodes[] = {"0", "1", "2",  "3",  "4",  "5",  "6",  "7", "8",
                                                "9", "10", "11", "12", "13", "14", "15", "16"};
  const int code = static_cast<int>(status.code());
  block.AddStatic("grpc-status", kCodes[code >= 0 && code <= kMaxStatusCode ? code : 2]);
  if (!status.message().empty()) {
    if (IsPercentEncodingFree(status.message())) {
      block.AddStaticName("grpc-message", status.message());
    } else {
      scratch.clear();
      PercentEncode(status.message(), scratch);
      block.AddStaticName("grpc-message", scratch);
    }
  }
  if (!status.details().empty()) {
    scratch.clear();
    Base64Encode(status.details(), scratch);
    block.AddStaticName("grpc-status-details-bin", scratch);
  }
}

bool AddReceivedMetadata(std::string_view name, std::string_view value, Metadata& metadata,
                         std::string& scratch) {
  if (name.empty() || name[0] == ':') return true;
  // Reserved fields never become metadata (user-agent does, as in other implementations).
  if (name.size() == 2 && name == "te") return true;
  if (name.size() == 12 && name == "content-type") return true;
  if (name.size() > 5 && name.substr(0, 5) == "grpc-") {
    const std::string_view rest = name.substr(5);
    if (rest == "timeout" || rest == "encoding" || rest == "accept-encoding" || rest == "status" ||
        rest == "message" || rest == "status-details-bin" || rest == "message-type") {
      return true;
    }
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
