#include "src/rpc/wire_format.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rill::internal {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using namespace std::string_view_literals;

// ---------------------------------------------------------------------------------------------
// grpc-timeout

struct TimeoutCase {
  nanoseconds timeout;
  std::string_view encoded;
};

TEST(EncodeTimeoutTest, PicksFinestUnitThatFitsAndRoundsUp) {
  const TimeoutCase cases[] = {
      // Each unit, exact.
      {nanoseconds(1), "1n"},
      {nanoseconds(99'999'999), "99999999n"},
      {microseconds(100'000), "100000u"},  // 100000000n has 9 digits
      {microseconds(99'999'999), "99999999u"},
      {milliseconds(100'000), "100000m"},
      {milliseconds(99'999'999), "99999999m"},
      {seconds(100'000), "100000S"},
      {seconds(99'999'999), "99999999S"},
      {minutes(10'000'000), "10000000M"},  // 600000000 S has 9 digits
      {minutes(99'999'999), "99999999M"},
      {hours(100'000'000 / 60 + 1), "1666667H"},
      // 8 digits fit, 9 move up a unit.
      {nanoseconds(100'000'000), "100000u"},
      {nanoseconds(12'345'678), "12345678n"},
      {nanoseconds(123'456'789), "123457u"},  // rounds up
      // Rounding up, never down.
      {milliseconds(1500) + nanoseconds(1), "1500001u"},
      {seconds(100'000) + nanoseconds(1), "100001S"},
      {nanoseconds(100'000'001), "100001u"},
      {nanoseconds(99'999'999'001), "100000m"},
      {seconds(1), "1000000u"},
      {seconds(30), "30000000u"},
      {seconds(100), "100000m"},
      // The largest representable timeout still encodes (in hours).
      {nanoseconds::max(), "2562048H"},
      // Zero and negative: the grammar wants a positive value.
      {nanoseconds(0), "1n"},
      {nanoseconds(-1), "1n"},
      {seconds(-5), "1n"},
      {nanoseconds::min(), "1n"},
  };
  for (const TimeoutCase& c : cases) {
    SCOPED_TRACE(c.timeout.count());
    EXPECT_EQ(EncodeTimeout(c.timeout), c.encoded);
    char buf[kMaxTimeoutEncodedSize];
    const size_t n = EncodeTimeout(c.timeout, buf);
    EXPECT_LE(n, kMaxTimeoutEncodedSize);
    EXPECT_EQ(std::string_view(buf, n), c.encoded);
  }
}

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

TEST(EncodeTimeoutTest, NeverShorterThanRequestedAndParsesBack) {
  for (int64_t t = 1; t < (int64_t{1} << 62); t = t * 3 + 7) {
    for (int64_t delta : {-1, 0, 1}) {
      const nanoseconds timeout(t + delta);
      if (timeout <= nanoseconds(0)) continue;
      const std::string encoded = EncodeTimeout(timeout);
      SCOPED_TRACE(encoded);
      ASSERT_LE(encoded.size(), kMaxTimeoutEncodedSize);
      const std::optional<nanoseconds> parsed = ParseTimeout(encoded);
      ASSERT_TRUE(parsed.has_value());
      EXPECT_GE(*parsed, timeout);
      // Less than one unit longer, and the unit is the finest that fits: a relative error
      // below 1e-5.
      const int64_t excess = (*parsed - timeout).count();
      EXPECT_LT(excess, UnitNanos(encoded.back()));
      EXPECT_LE(excess, timeout.count() / 99'999);
    }
  }
}

TEST(ParseTimeoutTest, EveryUnit) {
  const TimeoutCase cases[] = {
      {nanoseconds(5), "5n"},
      {microseconds(5), "5u"},
      {milliseconds(5), "5m"},
      {seconds(5), "5S"},
      {minutes(5), "5M"},
      {hours(5), "5H"},
      {nanoseconds(99'999'999), "99999999n"},
      {microseconds(99'999'999), "99999999u"},
      {milliseconds(99'999'999), "99999999m"},
      {seconds(99'999'999), "99999999S"},
      {minutes(99'999'999), "99999999M"},  // ~6.0e18 ns: still fits in int64
      {hours(2'562'047), "2562047H"},      // the largest hour count that fits
      {nanoseconds(0), "0n"},
      {nanoseconds(0), "0H"},
      {seconds(1), "00000001S"},  // leading zeros count towards the 8 digits
      {seconds(1), "1S"},
  };
  for (const TimeoutCase& c : cases) {
    SCOPED_TRACE(c.encoded);
    const std::optional<nanoseconds> parsed = ParseTimeout(c.encoded);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, c.timeout);
  }
}

TEST(ParseTimeoutTest, SaturatesInsteadOfOverflowing) {
  EXPECT_EQ(ParseTimeout("2562048H"), nanoseconds::max());
  EXPECT_EQ(ParseTimeout("99999999H"), nanoseconds::max());
  EXPECT_EQ(ParseTimeout("10000000H"), nanoseconds::max());
}

TEST(ParseTimeoutTest, RejectsMalformed) {
  const std::string_view cases[] = {
      "",           "1",          "S",   "n",   "1x",   "1s",          "1h",   "1N",
      "123456789S", "000000001S", " 1S", "1S ", "-1S",  "+1S",         "1.5S", "1 S",
      "0x1S",       "1SS",        "1Sn", "S1",  "1e3m", "\x31\x00S"sv, "１S",  "99999999",
      "999999999n",
  };
  for (std::string_view c : cases) {
    SCOPED_TRACE(c);
    EXPECT_FALSE(ParseTimeout(c).has_value());
  }
}

// ---------------------------------------------------------------------------------------------
// grpc-message percent-encoding

std::string Encode(std::string_view s) {
  std::string out;
  PercentEncode(s, out);
  return out;
}

std::string Decode(std::string_view s) {
  std::string out;
  PercentDecode(s, out);
  return out;
}

TEST(PercentEncodeTest, EncodesExactlyBytesOutsidePrintableAsciiAndPercent) {
  struct Case {
    std::string_view raw;
    std::string_view encoded;
  } const cases[] = {
      {"", ""},
      {"hello world", "hello world"},
      {"~!@#$^&*()_+`-={}|[]\\:\";'<>?,./", "~!@#$^&*()_+`-={}|[]\\:\";'<>?,./"},
      {"100%", "100%25"},
      {"%%", "%25%25"},
      {"a\nb", "a%0Ab"},
      {"\t\r\n", "%09%0D%0A"},
      {"\x7f", "%7F"},
      {"\x1f ", "%1F "},
      {"\0"sv, "%00"},
      {"\xff\xfe", "%FF%FE"},
      {"caf\xc3\xa9", "caf%C3%A9"},          // UTF-8 é
      {"\xe2\x82\xac 5", "%E2%82%AC 5"},     // UTF-8 €
      {"\xf0\x9f\x98\x80", "%F0%9F%98%80"},  // 4-byte UTF-8
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.encoded);
    EXPECT_EQ(Encode(c.raw), c.encoded);
    EXPECT_EQ(IsPercentEncodingFree(c.raw), c.raw == c.encoded);
    EXPECT_EQ(Decode(c.encoded), c.raw);
  }
}

TEST(PercentEncodeTest, AppendsToExistingContent) {
  std::string out = "prefix:";
  PercentEncode("a%b", out);
  EXPECT_EQ(out, "prefix:a%25b");
  PercentDecode("%41", out);
  EXPECT_EQ(out, "prefix:a%25bA");
}

TEST(PercentEncodeTest, RoundTripsEveryByte) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  const std::string encoded = Encode(all);
  EXPECT_EQ(encoded.size(), 256 + 2 * (256 - 94));  // 94 bytes pass through
  for (char c : encoded) {
    EXPECT_GE(c, 0x20);
    EXPECT_LE(c, 0x7E);
  }
  EXPECT_EQ(Decode(encoded), all);
}

TEST(PercentDecodeTest, IsLenientWithBrokenEscapes) {
  struct Case {
    std::string_view encoded;
    std::string_view decoded;
  } const cases[] = {
      {"%", "%"},       {"%4", "%4"},
      {"%ZZ", "%ZZ"},   {"%41", "A"},
      {"%4G", "%4G"},   {"%G4", "%G4"},
      {"a%", "a%"},     {"%%41", "%A"},
      {"%41%", "A%"},   {"%2", "%2"},
      {"%%%", "%%%"},   {"%e2%82%ac", "\xe2\x82\xac"},  // lowercase hex is accepted
      {"%00", "\0"sv},  {"100% sure", "100% sure"},
      {"%2541", "%41"},  // decoded once, not recursively
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.encoded);
    EXPECT_EQ(Decode(c.encoded), c.decoded);
  }
}

// ---------------------------------------------------------------------------------------------
// base64 for -bin metadata

std::string B64(std::string_view s) {
  std::string out;
  Base64Encode(s, out);
  return out;
}

std::optional<std::string> UnB64(std::string_view s) {
  std::string out;
  if (!Base64Decode(s, out)) return std::nullopt;
  return out;
}

std::string Padded(std::string unpadded) {
  while (unpadded.size() % 4 != 0) unpadded.push_back('=');
  return unpadded;
}

TEST(Base64Test, KnownVectors) {
  // RFC 4648 §10, without padding on encode.
  struct Case {
    std::string_view raw;
    std::string_view encoded;
  } const cases[] = {
      {"", ""},
      {"f", "Zg"},
      {"fo", "Zm8"},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg"},
      {"fooba", "Zm9vYmE"},
      {"foobar", "Zm9vYmFy"},
      {"\xfb\xff\xbf", "+/+/"},  // the two non-alphanumeric characters of the alphabet
      {"\0\0\0"sv, "AAAA"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.encoded);
    EXPECT_EQ(B64(c.raw), c.encoded);
    EXPECT_EQ(UnB64(c.encoded), c.raw);
    EXPECT_EQ(UnB64(Padded(std::string(c.encoded))), c.raw);
  }
}

TEST(Base64Test, RoundTripsLengths0To64PaddedAndUnpadded) {
  for (size_t len = 0; len <= 64; ++len) {
    SCOPED_TRACE(len);
    std::string raw;
    for (size_t i = 0; i < len; ++i) raw.push_back(static_cast<char>((i * 167 + len * 31) & 0xFF));
    const std::string encoded = B64(raw);
    EXPECT_EQ(encoded.size(), (len * 4 + 2) / 3);
    EXPECT_EQ(encoded.find('='), std::string::npos);
    EXPECT_NE(encoded.size() % 4, 1u);
    EXPECT_EQ(UnB64(encoded), raw);
    EXPECT_EQ(UnB64(Padded(encoded)), raw);
  }
}

TEST(Base64Test, AppendsAndLeavesOutputUntouchedOnFailure) {
  std::string out = "x";
  Base64Encode("foo", out);
  EXPECT_EQ(out, "xZm9v");
  EXPECT_TRUE(Base64Decode("YmFy", out));
  EXPECT_EQ(out, "xZm9vbar");
  EXPECT_FALSE(Base64Decode("YmFy!mFy", out));
  EXPECT_EQ(out, "xZm9vbar");
  EXPECT_FALSE(Base64Decode("Y", out));
  EXPECT_EQ(out, "xZm9vbar");
  EXPECT_TRUE(Base64Decode("YmE", out));
  EXPECT_EQ(out, "xZm9vbarba");
}

TEST(Base64Test, ToleratesNonZeroTrailingBits) {
  EXPECT_EQ(UnB64("Zh"), "f");     // canonical "Zg"
  EXPECT_EQ(UnB64("Zm9="), "fo");  // canonical "Zm8="
}

TEST(Base64Test, Rejections) {
  const std::string_view cases[] = {
      "Z",             // 1 mod 4
      "Zm9vY",         // 1 mod 4
      "Z===",          // too much padding
      "====",          //
      "Zg=",           // partial padding
      "Zg=A",          // '=' inside
      "=Zg=",          //
      "Zm9v====",      //
      "Zm9vYg===",     //
      "Zg==Zg==",      // padding in the middle (concatenated values)
      "Zm8=Zm8",       //
      "Zm 9",          // whitespace
      "Zm9\n",         //
      " Zm9",          //
      "Zm8,Zm8",       // comma-joined values must be split first
      "Zm9-",          // URL-safe alphabet
      "Zm9_",          //
      "Zm9v\x80\x41",  // outside ASCII
      "Zm9\0"sv,       //
      "Zm9v.A",        //
  };
  for (std::string_view c : cases) {
    SCOPED_TRACE(c);
    EXPECT_EQ(UnB64(c), std::nullopt);
  }
}

// ---------------------------------------------------------------------------------------------
// Metadata keys and values

TEST(MetadataKeyTest, Validity) {
  for (std::string_view key : {"a", "x-user-id", "trace.id", "a_b", "0", "grpc-status",
                               "my-key-bin", "0123456789abcdefghijklmnopqrstuvwxyz_-."}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(IsValidMetadataKey(key));
  }
  for (std::string_view key :
       {""sv, "X-User-Id"sv, "A"sv, "key "sv, " key"sv, "a b"sv, ":path"sv, "key:"sv,
        "k\xc3\xa9y"sv, "a/b"sv, "a\0b"sv, "a\tb"sv, "a+b"sv, "a~b"sv}) {
    SCOPED_TRACE(key);
    EXPECT_FALSE(IsValidMetadataKey(key));
  }
}

TEST(MetadataKeyTest, Reserved) {
  EXPECT_TRUE(IsReservedMetadataKey("grpc-status"));
  EXPECT_TRUE(IsReservedMetadataKey("grpc-"));
  EXPECT_TRUE(IsReservedMetadataKey("grpc-custom-bin"));
  EXPECT_FALSE(IsReservedMetadataKey("grpc-trace-bin"));
  EXPECT_FALSE(IsReservedMetadataKey("grpc"));
  EXPECT_FALSE(IsReservedMetadataKey("grpcx-a"));
  EXPECT_FALSE(IsReservedMetadataKey("x-grpc-a"));
  EXPECT_FALSE(IsReservedMetadataKey(""));
}

TEST(MetadataKeyTest, BinarySuffix) {
  EXPECT_TRUE(IsBinaryMetadataKey("a-bin"));
  EXPECT_TRUE(IsBinaryMetadataKey("trace-proto-bin"));
  EXPECT_FALSE(IsBinaryMetadataKey("-bin"));  // the name before the suffix must be non-empty
  EXPECT_FALSE(IsBinaryMetadataKey("bin"));
  EXPECT_FALSE(IsBinaryMetadataKey("a-bin-x"));
  EXPECT_FALSE(IsBinaryMetadataKey("abin"));
  EXPECT_FALSE(IsBinaryMetadataKey("a_bin"));
  EXPECT_FALSE(IsBinaryMetadataKey(""));
}

TEST(MetadataValueTest, PrintableAsciiOnly) {
  EXPECT_TRUE(IsValidAsciiMetadataValue(""));
  EXPECT_TRUE(IsValidAsciiMetadataValue("Bearer y235.wef315yfh138vh31hv93hv8h3v"));
  EXPECT_TRUE(IsValidAsciiMetadataValue(" ~"));
  std::string printable;
  for (int c = 0x20; c <= 0x7E; ++c) printable.push_back(static_cast<char>(c));
  EXPECT_TRUE(IsValidAsciiMetadataValue(printable));
  for (int c = 0; c < 256; ++c) {
    if (c >= 0x20 && c <= 0x7E) continue;
    const std::string value = "ok" + std::string(1, static_cast<char>(c)) + "ok";
    SCOPED_TRACE(c);
    EXPECT_FALSE(IsValidAsciiMetadataValue(value));
  }
}

// ---------------------------------------------------------------------------------------------
// :path and content-type

TEST(ParseMethodPathTest, GoodPaths) {
  struct Case {
    std::string_view path, service, method;
  } const cases[] = {
      {"/a.B/C", "a.B", "C"},
      {"/grpc.testing.TestService/UnaryCall", "grpc.testing.TestService", "UnaryCall"},
      {"/S/m", "S", "m"},
      {"/a.b.c.D/Method_Name2", "a.b.c.D", "Method_Name2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    const std::optional<MethodPath> parsed = ParseMethodPath(c.path);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->service, c.service);
    EXPECT_EQ(parsed->method, c.method);
  }
}

TEST(ParseMethodPathTest, BadPaths) {
  for (std::string_view path : {"/a.B/", "//C", "a.B/C", "/a.B/C/D", "/", "", "//", "///", "/a.B",
                                "/a.B//C", "/a.B/C/", "a", "/a/"}) {
    SCOPED_TRACE(path);
    EXPECT_FALSE(ParseMethodPath(path).has_value());
  }
}

TEST(ContentTypeTest, Subtype) {
  EXPECT_EQ(GrpcContentSubtype("application/grpc"), "");
  EXPECT_EQ(GrpcContentSubtype("application/grpc+proto"), "proto");
  EXPECT_EQ(GrpcContentSubtype("application/grpc+json;charset=utf-8"), "json");
  EXPECT_EQ(GrpcContentSubtype("application/grpc+json ;x=y"), "json");
  EXPECT_EQ(GrpcContentSubtype("application/grpc ; charset=utf-8"), "");
  EXPECT_FALSE(GrpcContentSubtype("application/grpc-web").has_value());
  EXPECT_TRUE(IsProtoSubtype(""));
  EXPECT_TRUE(IsProtoSubtype("PROTO"));
  EXPECT_FALSE(IsProtoSubtype("json"));
  EXPECT_FALSE(IsProtoSubtype("protobuf"));
}

TEST(ContentTypeTest, GrpcAndVariants) {
  for (std::string_view value :
       {"application/grpc", "application/grpc+proto", "application/grpc+json",
        "application/grpc;charset=utf-8", "application/grpc+proto;charset=utf-8",
        "application/grpc ; charset=utf-8", "Application/GRPC", "APPLICATION/GRPC+PROTO"}) {
    SCOPED_TRACE(value);
    EXPECT_TRUE(IsGrpcContentType(value));
  }
  const std::string_view rejected[] = {"application/grpcx",
                                       "application/json",
                                       "application/grpc-web",
                                       "application/grpc-web+proto",
                                       "",
                                       "application/grp",
                                       "application",
                                       "text/grpc",
                                       " application/grpc",
                                       "application/grpc x",
                                       "application/grpc\0"sv,
                                       "application/grpc/x"};
  for (std::string_view value : rejected) {
    SCOPED_TRACE(value);
    EXPECT_FALSE(IsGrpcContentType(value));
  }
}

}  // namespace
}  // namespace rill::internal
