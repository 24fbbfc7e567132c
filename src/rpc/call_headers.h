// Building the header blocks of a call (request headers, response headers, trailers) from rill's
// Metadata and Status, with the wire encodings gRPC requires.
#ifndef RILL_SRC_RPC_CALL_HEADERS_H_
#define RILL_SRC_RPC_CALL_HEADERS_H_

#include <string>
#include <string_view>

#include "rill/metadata.h"
#include "rill/status.h"
#include "src/http2/header_block.h"

namespace rill::internal {

// Appends custom metadata: "-bin" values base64-encoded (unpadded), others as they are.
// Returns INTERNAL (appending nothing more) at the first invalid key or ASCII value, or a key
// reserved for gRPC.
Status AppendMetadata(const Metadata& metadata, HeaderBlock& block, std::string& scratch);

// Appends grpc-status, grpc-message (percent-encoded, omitted when empty) and
// grpc-status-details-bin (when the status has details).
void AppendStatus(const Status& status, HeaderBlock& block, std::string& scratch);

// Adds one received header to `metadata` if it is custom metadata: reserved and pseudo headers
// are skipped; "-bin" values are base64-decoded. Returns false for an undecodable -bin value.
bool AddReceivedMetadata(std::string_view name, std::string_view value, Metadata& metadata,
                         std::string& scratch);

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_CALL_HEADERS_H_
