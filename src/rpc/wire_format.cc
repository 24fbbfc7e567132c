#include "src/rpc/wire_format.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

namespace rill::internal {
namespace {

// Byte classes, one table lookup per byte on every hot path.
enum : uint8_t {
  kKeyChar = 1 << 0,         // 0-9 a-z _ - .  (Header-Name)
  kAsciiValueChar = 1 << 1,  // 0x20..0x7E      (ASCII-Value)
  kPercentFree = 1 << 2,     // 0x20..0x7E except '%' (Percent-Byte-Unencoded)
};

constexpr std::array<uint8_t, 256> kByteClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0x20; c <= 0x7E; ++c) {
    t[c] |= kAsciiValueChar;
    if (c != '%') t[c] |= kPercentFree;
  }
  for (int c = '0'; c <= '9'; ++c) t[c] |= kKeyChar;
  for (int c = 'a'; c <= 'z'; ++c) t[c] |= kKeyChar;
  t['_'] |= kKeyChar;
  t['-'] |= kKeyChar;
  t['.'] |= kKeyChar;
  return t;
}();

inline bool AllHave(std::string_view s, uint8_t cls) {
  for (unsigned char c : s) {
    if (!(kByteClass[c] & cls)) return false;
  }
  return true;
}

// Hex digit values (either case); 0xFF for anything else.
constexpr std::array<uint8_t, 256> kHexValue = [] {
  std::array<uint8_t, 256> t{};
  t.fill(0xFF);
  for (int c = '0'; c <= '9'; ++c) t[c] = static_cast<uint8_t>(c - '0');
  for (int c = 'A'; c <= 'F'; ++c) t[c] = static_cast<uint8_t>(c - 'A' + 10);
  for (int c = 'a'; c <= 'f'; ++c) t[c] = static_cast<uint8_t>(c - 'a' + 10);
  return t;
}();

constexpr char kUpperHex[] = "0123456789ABCDEF";

// RFC 4648 §4 (standard alphabet, not the URL-safe one).
constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Sextet values; 0xFF for bytes outside the alphabet (including '=').
constexpr std::array<uint8_t, 256> kBase64Value = [] {
  std::array<uint8_t, 256> t{};
  t.fill(0xFF);
  for (int i = 0; i < 64; ++i) {
    t[static_cast<unsigned char>(kBase64Alphabet[i])] = static_cast<uint8_t>(i);
  }
  return t;
}();

constexpr int64_t kMaxTimeoutValue = 99'999'999;  // 8 digits

struct TimeoutUnit {
  int64_t nanos;
  char symbol;
};
// Finest first: encoding takes the first unit whose rounded-up value fits in 8 digits.
constexpr TimeoutUnit kTimeoutUnits[] = {
    {1, 'n'},
    {1'000, 'u'},
    {1'000'000, 'm'},
    {1'000'000'000, 'S'},
    {60 * int64_t{1'000'000'000}, 'M'},
    {3600 * int64_t{1'000'000'000}, 'H'},
};

// Nanoseconds per unit symbol; 0 for bytes that are not a unit.
constexpr std::array<int64_t, 256> kTimeoutUnitNanos = [] {
  std::array<int64_t, 256> t{};
  for (const TimeoutUnit& u : kTimeoutUnits) t[static_cast<unsigned char>(u.symbol)] = u.nanos;
  return t;
}();

}  // namespace

size_t EncodeTimeout(std::chrono::nanoseconds timeout, char* out) {
  // The grammar wants a positive value: an expired timeout goes out as the shortest one.
  const int64_t nanos = timeout.count() > 0 ? timeout.count() : 1;
  int64_t value = 0;
  char symbol = 'H';
  for (const TimeoutUnit& unit : kTimeoutUnits) {
    value = nanos / unit.nanos + (nanos % unit.nanos != 0 ? 1 : 0);
    symbol = unit.symbol;
    // int64 nanoseconds are at most ~2.6 million hours, so the last unit always fits.
    if (value <= kMaxTimeoutValue) break;
  }
  char digits[8];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  out[n] = symbol;
  return n + 1;
}

std::string EncodeTimeout(std::chrono::nanoseconds timeout) {
  char buf[kMaxTimeoutEncodedSize];
  return std::string(buf, EncodeTimeout(timeout, buf));
}

std::optional<std::chrono::nanoseconds> ParseTimeout(std::string_view value) {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  const int64_t unit_nanos = kTimeoutUnitNanos[static_cast<unsigned char>(value.back())];
  if (unit_nanos == 0) return std::nullopt;
  int64_t n = 0;
  for (size_t i = 0; i + 1 < value.size(); ++i) {
    const unsigned digit = static_cast<unsigned char>(value[i]) - unsigned{'0'};
    if (digit > 9) return std::nullopt;
    n = n * 10 + digit;
  }
  // Only hours can overflow: 99999999 minutes is about 6.0e18 ns, below INT64_MAX.
  if (n > std::numeric_limits<int64_t>::max() / unit_nanos) {
    return std::chrono::nanoseconds::max();
  }
  return std::chrono::nanoseconds(n * unit_nanos);
}

bool IsPercentEncodingFree(std::string_view message) { return AllHave(message, kPercentFree); }

void PercentEncode(std::string_view message, std::string& out) {
  size_t escaped = 0;
  for (unsigned char c : message) escaped += !(kByteClass[c] & kPercentFree);
  if (escaped == 0) {
    out.append(message);
    return;
  }
  const size_t start = out.size();
  out.resize(start + message.size() + 2 * escaped);
  char* p = out.data() + start;
  for (unsigned char c : message) {
    if (kByteClass[c] & kPercentFree) {
      *p++ = static_cast<char>(c);
    } else {
      p[0] = '%';
      p[1] = kUpperHex[c >> 4];
      p[2] = kUpperHex[c & 0xF];
      p += 3;
    }
  }
}

void PercentDecode(std::string_view value, std::string& out) {
  const size_t first = value.find('%');
  if (first == std::string_view::npos) {
    out.append(value);
    return;
  }
  const size_t start = out.size();
  out.resize(start + value.size());  // decoding never grows
  char* const begin = out.data() + start;
  std::memcpy(begin, value.data(), first);
  char* p = begin + first;
  const size_t n = value.size();
  for (size_t i = first; i < n; ++i) {
    const char c = value[i];
    if (c == '%' && i + 2 < n) {
      const uint8_t hi = kHexValue[static_cast<unsigned char>(value[i + 1])];
      const uint8_t lo = kHexValue[static_cast<unsigned char>(value[i + 2])];
      if ((hi | lo) < 16) {
        *p++ = static_cast<char>((hi << 4) | lo);
        i += 2;
        continue;
      }
    }
    *p++ = c;  // a broken escape is kept as is
  }
  out.resize(static_cast<size_t>(p - out.data()));
}

void Base64Encode(std::string_view bytes, std::string& out) {
  const size_t n = bytes.size();
  const size_t start = out.size();
  out.resize(start + (n * 4 + 2) / 3);
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  char* p = out.data() + start;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    p[0] = kBase64Alphabet[v >> 18];
    p[1] = kBase64Alphabet[(v >> 12) & 0x3F];
    p[2] = kBase64Alphabet[(v >> 6) & 0x3F];
    p[3] = kBase64Alphabet[v & 0x3F];
    p += 4;
  }
  if (n - i == 1) {
    const uint32_t v = uint32_t{in[i]} << 16;
    p[0] = kBase64Alphabet[v >> 18];
    p[1] = kBase64Alphabet[(v >> 12) & 0x3F];
  } else if (n - i == 2) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8);
    p[0] = kBase64Alphabet[v >> 18];
    p[1] = kBase64Alphabet[(v >> 12) & 0x3F];
    p[2] = kBase64Alphabet[(v >> 6) & 0x3F];
  }
}

bool Base64Decode(std::string_view text, std::string& out) {
  size_t n = text.size();
  // Padding is only recognised where it completes the last quantum of a padded encoding; any
  // other '=' is outside the alphabet and fails below.
  if (n != 0 && n % 4 == 0 && text[n - 1] == '=') {
    --n;
    if (text[n - 1] == '=') --n;
  }
  if (n % 4 == 1) return false;
  const auto* in = reinterpret_cast<const unsigned char*>(text.data());
  const size_t start = out.size();
  out.resize(start + n / 4 * 3 + (n % 4 == 0 ? 0 : n % 4 - 1));
  char* p = out.data() + start;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const uint32_t a = kBase64Value[in[i]];
    const uint32_t b = kBase64Value[in[i + 1]];
    const uint32_t c = kBase64Value[in[i + 2]];
    const uint32_t d = kBase64Value[in[i + 3]];
    if ((a | b | c | d) & 0x80) {
      out.resize(start);
      return false;
    }
    const uint32_t v = (a << 18) | (b << 12) | (c << 6) | d;
    p[0] = static_cast<char>(v >> 16);
    p[1] = static_cast<char>(v >> 8);
    p[2] = static_cast<char>(v);
    p += 3;
  }
  if (n - i >= 2) {
    const uint32_t a = kBase64Value[in[i]];
    const uint32_t b = kBase64Value[in[i + 1]];
    const uint32_t c = n - i == 3 ? kBase64Value[in[i + 2]] : 0;
    if ((a | b | c) & 0x80) {
      out.resize(start);
      return false;
    }
    const uint32_t v = (a << 18) | (b << 12) | (c << 6);
    p[0] = static_cast<char>(v >> 16);
    if (n - i == 3) p[1] = static_cast<char>(v >> 8);
  }
  return true;
}

bool IsValidMetadataKey(std::string_view key) { return !key.empty() && AllHave(key, kKeyChar); }

bool IsReservedMetadataKey(std::string_view key) {
  // grpc-trace-bin is gRPC's, but the application (its tracer) sends it; so does a server's
  // handler with grpc-retry-pushback-ms, to tell retrying clients when (or not) to retry.
  return key.starts_with("grpc-") && key != "grpc-trace-bin" && key != "grpc-retry-pushback-ms";
}

bool IsValidAsciiMetadataValue(std::string_view value) { return AllHave(value, kAsciiValueChar); }

std::optional<MethodPath> ParseMethodPath(std::string_view path) {
  // Shortest valid path: "/s/m".
  if (path.size() < 4 || path[0] != '/') return std::nullopt;
  const size_t slash = path.find('/', 1);
  if (slash == std::string_view::npos || slash == 1 || slash + 1 == path.size()) {
    return std::nullopt;
  }
  if (path.find('/', slash + 1) != std::string_view::npos) return std::nullopt;
  return MethodPath{path.substr(1, slash - 1), path.substr(slash + 1)};
}

bool IsGrpcContentType(std::string_view value) { return GrpcContentSubtype(value).has_value(); }

bool IsProtoSubtype(std::string_view subtype) {
  if (subtype.empty()) return true;
  constexpr std::string_view kProto = "proto";
  if (subtype.size() != kProto.size()) return false;
  for (size_t i = 0; i < kProto.size(); ++i) {
    char c = subtype[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c | 0x20);
    if (c != kProto[i]) return false;
  }
  return true;
}

std::optional<std::string_view> GrpcContentSubtype(std::string_view value) {
  constexpr std::string_view kPrefix = "application/grpc";
  if (value == kPrefix) return std::string_view();  // what nearly every client sends
  if (value.size() < kPrefix.size()) return std::nullopt;
  // Media types compare case-insensitively (RFC 9110 §8.3.1); kPrefix is lowercase letters and
  // '/', so setting the 0x20 bit on letters is enough.
  for (size_t i = 0; i < kPrefix.size(); ++i) {
    char c = value[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c | 0x20);
    if (c != kPrefix[i]) return std::nullopt;
  }
  std::string_view rest = value.substr(kPrefix.size());
  if (rest.empty()) return std::string_view();
  if (rest[0] == '+') {
    rest.remove_prefix(1);
    return rest.substr(0, std::min(rest.find(';'), rest.find_first_of(" \t")));
  }
  // Parameters may follow after optional whitespace: "application/grpc ; charset=utf-8".
  size_t i = 0;
  while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
  if (i == rest.size() || rest[i] == ';') return std::string_view();
  return std::nullopt;
}

}  // namespace rill::internal
