// Feeds arbitrary bytes to every decoder in src/rpc/wire_format.h (each of them parses header
// values a peer controls) and checks the properties the encoders promise:
//   - decode(encode(x)) == x for percent-encoding and base64, for any bytes x;
//   - a parsed grpc-timeout re-encodes to the same duration; an encoded one never parses
//     shorter than what was asked for, and never by a whole unit more;
//   - the table-driven validators agree with a plain reading of the grammar.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "rill/detail/check.h"
#include "src/rpc/wire_format.h"

namespace rill::internal {
namespace {

using std::chrono::nanoseconds;

int64_t UnitNanos(char unit) {
  switch (unit) {
    case 'n':
      return 1;
    case 'u':
      return 1'000;
    case 'm':
      return 1'000'000;
    case 'S':
      return 1'000'000'000;
    case 'M':
      return 60'000'000'000;
    case 'H':
      return 3'600'000'000'000;
    default:
      return 0;
  }
}

void CheckTimeout(std::string_view in) {
  const std::optional<nanoseconds> parsed = ParseTimeout(in);
  bool well_formed = in.size() >= 2 && in.size() <= 9 && UnitNanos(in.back()) != 0;
  for (size_t i = 0; well_formed && i + 1 < in.size(); ++i) {
    well_formed = in[i] >= '0' && in[i] <= '9';
  }
  RILL_CHECK_MSG(parsed.has_value() == well_formed, "ParseTimeout disagrees with the grammar");
  if (parsed) {
    RILL_CHECK(*parsed >= nanoseconds(0));
    if (*parsed != nanoseconds::max()) {
      // Whatever unit the peer used, the value is exact in some unit and re-encodes exactly.
      RILL_CHECK_MSG(ParseTimeout(EncodeTimeout(*parsed)) == std::max(*parsed, nanoseconds(1)),
                     "timeout does not survive a round trip");
    }
  }

  // Any int64 duration encodes into a valid value that is not shorter, and less than one unit
  // longer.
  int64_t raw = 0;
  std::memcpy(&raw, in.data(), std::min(in.size(), sizeof(raw)));
  char buf[kMaxTimeoutEncodedSize];
  const size_t n = EncodeTimeout(nanoseconds(raw), buf);
  RILL_CHECK(n >= 2 && n <= kMaxTimeoutEncodedSize);
  const std::string_view encoded(buf, n);
  const std::optional<nanoseconds> back = ParseTimeout(encoded);
  RILL_CHECK_MSG(back.has_value(), "EncodeTimeout produced an unparsable value");
  const nanoseconds wanted(std::max<int64_t>(raw, 1));
  RILL_CHECK_MSG(*back >= wanted, "encoded timeout is shorter than requested");
  RILL_CHECK_MSG((*back - wanted).count() < UnitNanos(encoded.back()),
                 "encoded timeout rounded up by a whole unit");
  // The finest unit that fits: one unit finer would need more than 8 digits.
  constexpr std::string_view kUnits = "numSMH";
  const size_t unit_index = kUnits.find(encoded.back());
  if (unit_index > 0) {
    const int64_t finer = UnitNanos(kUnits[unit_index - 1]);
    const int64_t in_finer = wanted.count() / finer + (wanted.count() % finer != 0 ? 1 : 0);
    RILL_CHECK_MSG(in_finer > 99'999'999, "EncodeTimeout did not pick the finest unit");
  }
}

void CheckPercent(std::string_view in) {
  std::string encoded = "p:";
  PercentEncode(in, encoded);
  std::string_view body = std::string_view(encoded).substr(2);
  for (char c : body) RILL_CHECK(c >= 0x20 && c <= 0x7E);
  RILL_CHECK((body == in) == IsPercentEncodingFree(in));
  std::string decoded = "d:";
  PercentDecode(body, decoded);
  RILL_CHECK_MSG(std::string_view(decoded).substr(2) == in, "percent round trip failed");

  // Lenient decoding of hostile input: never longer than the input, identity without '%'.
  std::string lenient;
  PercentDecode(in, lenient);
  RILL_CHECK(lenient.size() <= in.size());
  if (in.find('%') == std::string_view::npos) RILL_CHECK(lenient == in);
}

void CheckBase64(std::string_view in) {
  std::string encoded = "e:";
  Base64Encode(in, encoded);
  const std::string_view body = std::string_view(encoded).substr(2);
  RILL_CHECK(body.size() == (in.size() * 4 + 2) / 3);
  RILL_CHECK(body.find('=') == std::string_view::npos);
  std::string decoded = "d:";
  RILL_CHECK(Base64Decode(body, decoded));
  RILL_CHECK_MSG(std::string_view(decoded).substr(2) == in, "base64 round trip failed");
  std::string padded(body);
  while (padded.size() % 4 != 0) padded.push_back('=');
  decoded.resize(2);
  RILL_CHECK(Base64Decode(padded, decoded));
  RILL_CHECK_MSG(std::string_view(decoded).substr(2) == in, "padded base64 round trip failed");

  // Hostile input: either rejected with `out` untouched, or decoded to bytes whose canonical
  // encoding has the length of the unpadded input.
  std::string out = "x";
  if (Base64Decode(in, out)) {
    std::string_view unpadded = in;
    while (!unpadded.empty() && unpadded.back() == '=') unpadded.remove_suffix(1);
    RILL_CHECK(unpadded.size() % 4 != 1);
    RILL_CHECK(unpadded.find('=') == std::string_view::npos);
    RILL_CHECK(in.size() == unpadded.size() || in.size() % 4 == 0);
    std::string again;
    Base64Encode(std::string_view(out).substr(1), again);
    RILL_CHECK_MSG(again.size() == unpadded.size(), "base64 decode kept a stray character");
  } else {
    RILL_CHECK_MSG(out == "x", "failed base64 decode changed its output");
  }
}

void CheckMetadata(std::string_view in) {
  bool key = !in.empty();
  bool value = true;
  for (char c : in) {
    key = key &&
          ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_' || c == '-' || c == '.');
    value = value && c >= 0x20 && c <= 0x7E;
  }
  RILL_CHECK(IsValidMetadataKey(in) == key);
  RILL_CHECK(IsValidAsciiMetadataValue(in) == value);
  // Every grpc- key is gRPC's, except grpc-trace-bin, which the application's tracer sends, and
  // grpc-retry-pushback-ms, which a server's handler sends to retrying clients.
  RILL_CHECK(IsReservedMetadataKey(in) == (in.substr(0, 5) == "grpc-" && in != "grpc-trace-bin" &&
                                           in != "grpc-retry-pushback-ms"));
  RILL_CHECK(IsBinaryMetadataKey(in) == (in.size() > 4 && in.ends_with("-bin")));
}

void CheckPath(std::string_view in) {
  const std::optional<MethodPath> path = ParseMethodPath(in);
  size_t slashes = 0;
  for (char c : in) slashes += c == '/';
  const size_t second = in.find('/', 1);
  const bool well_formed = in.starts_with('/') && slashes == 2 && second != 1 &&
                           second != std::string_view::npos && second + 1 < in.size();
  RILL_CHECK_MSG(path.has_value() == well_formed, "ParseMethodPath disagrees with the grammar");
  if (path) {
    RILL_CHECK(!path->service.empty() && !path->method.empty());
    RILL_CHECK("/" + std::string(path->service) + "/" + std::string(path->method) == in);
  }
}

void CheckContentType(std::string_view in) {
  const bool grpc = IsGrpcContentType(in);
  if (grpc) {
    std::string lower(in.substr(0, 16));
    for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
    RILL_CHECK(lower == "application/grpc");
  }
}

}  // namespace
}  // namespace rill::internal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill::internal;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  CheckTimeout(in);
  CheckPercent(in);
  CheckBase64(in);
  CheckMetadata(in);
  CheckPath(in);
  CheckContentType(in);
  return 0;
}
