// Encodings gRPC puts in HTTP/2 header fields (PROTOCOL-HTTP2.md): the grpc-timeout value,
// percent-encoded grpc-message, base64 for binary (-bin) metadata, and the validity rules for
// metadata keys and ASCII values.
//
//   char buf[kMaxTimeoutEncodedSize];
//   headers.Add("grpc-timeout", std::string_view(buf, EncodeTimeout(remaining, buf)));
//   std::optional<std::chrono::nanoseconds> timeout = ParseTimeout(value);  // nullopt: malformed
//   std::string message;
//   PercentEncode(status.message(), message);
//
// All functions are pure and thread-safe, and allocate nothing beyond growing the caller's
// `out` string. Decoders never trust their input (every value may come from a hostile peer)
// and report malformed input instead of guessing.
#ifndef RILL_SRC_RPC_WIRE_FORMAT_H_
#define RILL_SRC_RPC_WIRE_FORMAT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rill::internal {

// grpc-timeout: "TimeoutValue TimeoutUnit", value at most 8 ASCII digits, unit one of
// H M S m u n. Encode picks the finest unit whose value fits in 8 digits, rounding up so the
// peer never sees a shorter timeout than the caller asked for ("1500000001n" does not fit, so
// 1.500000001 s encodes as "1500001u"). The grammar requires a positive value, so timeouts
// <= 0 encode as "1n"; callers normally fail the call locally instead.
// Writes into `out` (at least kMaxTimeoutEncodedSize bytes, no terminator) and returns the
// length.
inline constexpr size_t kMaxTimeoutEncodedSize = 9;
size_t EncodeTimeout(std::chrono::nanoseconds timeout, char* out);
std::string EncodeTimeout(std::chrono::nanoseconds timeout);
// Parses a grpc-timeout value; nullopt when malformed (empty, no digits, a non-digit, a sign or
// whitespace, more than 8 digits, unknown unit, trailing bytes). A zero value ("0S") is accepted
// as an already expired timeout, and leading zeros are allowed within the 8 digits. Values too
// large for int64 nanoseconds (only possible in hours) saturate at nanoseconds::max(); a caller
// turning the result into a deadline must saturate that addition too.
std::optional<std::chrono::nanoseconds> ParseTimeout(std::string_view value);

// grpc-message: percent-encodes every byte outside 0x20..0x7E and '%' itself (uppercase hex).
// Appends to `out`.
void PercentEncode(std::string_view message, std::string& out);
// Decodes leniently as the spec requires (never fails, never drops the message): "%XX" with two
// hex digits of either case becomes one byte, and a '%' not followed by two hex digits is kept
// as is. Appends to `out`.
void PercentDecode(std::string_view value, std::string& out);
// True when the message needs no encoding (fast path).
bool IsPercentEncodingFree(std::string_view message);

// Binary metadata values: standard base64 alphabet (RFC 4648 §4). Encode emits no padding (as
// the spec recommends). Decode accepts padded and unpadded input; it rejects bytes outside the
// alphabet (whitespace and ',' included: the caller splits comma-joined values first), '=' other
// than one or two at the end of a length that is a multiple of 4, and an unpadded length of
// 1 mod 4. Non-zero bits left over in the last character are tolerated. Both append to `out`;
// on failure Decode leaves `out` as it was.
void Base64Encode(std::string_view bytes, std::string& out);
bool Base64Decode(std::string_view text, std::string& out);

// Metadata keys: non-empty, only 0-9 a-z _ - . (lowercase). Keys starting with "grpc-" are
// reserved for gRPC itself, except grpc-trace-bin (trace context the application propagates)
// and grpc-retry-pushback-ms (a handler telling retrying clients when to retry, gRFC A6).
bool IsValidMetadataKey(std::string_view key);
bool IsReservedMetadataKey(std::string_view key);
// Keys ending in "-bin" carry binary values.
inline bool IsBinaryMetadataKey(std::string_view key) {
  return key.size() > 4 && key.substr(key.size() - 4) == "-bin";
}
// ASCII values: printable 0x20..0x7E. The empty value is accepted: the grammar says 1*, but
// empty values are valid HTTP field values, which the spec forbids failing on.
bool IsValidAsciiMetadataValue(std::string_view value);

// Splits ":path" = "/package.Service/Method" into its two parts; nullopt when malformed
// (missing leading '/', no second '/', empty service or method, more slashes).
struct MethodPath {
  std::string_view service;
  std::string_view method;
};
std::optional<MethodPath> ParseMethodPath(std::string_view path);

// content-type: "application/grpc" (compared case-insensitively, as media types are), then
// nothing, '+' and a subtype ("+proto"), or parameters after optional whitespace (";x=y").
// "application/grpc-web" and "application/grpcx" are not gRPC.
bool IsGrpcContentType(std::string_view value);
// The subtype of a gRPC content-type ("proto" for "application/grpc+proto;x=y", "" for plain
// "application/grpc"); nullopt when `value` is not gRPC at all.
std::optional<std::string_view> GrpcContentSubtype(std::string_view value);
// The message codec rill speaks: no subtype, or "proto" in any case.
bool IsProtoSubtype(std::string_view subtype);

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_WIRE_FORMAT_H_
