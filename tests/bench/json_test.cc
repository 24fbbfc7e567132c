#include "bench/stats/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace rill::bench {
namespace {

TEST(JsonParseTest, AcceptsValidDocuments) {
  const rill::StatusOr<JsonValue> v = ParseJson(
      " {\"a\": [1, -2.5e3, 0, true, false, null], \"b\": {\"c\": \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\"},"
      " \"u\": \"\\u00b5s \\ud83d\\ude00\", \"raw\": \"\xC2\xB5s\", \"e\": {}, \"f\": []}\n");
  ASSERT_TRUE(v.ok()) << v.status();
  const JsonValue* a = v->Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items().size(), 6u);
  EXPECT_EQ(*a->items()[0].AsUint64(), 1u);
  EXPECT_EQ(*a->items()[1].AsDouble(), -2500.0);
  EXPECT_FALSE(a->items()[1].AsInt64().ok());  // Not an integer literal.
  EXPECT_EQ(*a->items()[2].AsInt64(), 0);
  EXPECT_TRUE(*a->items()[3].AsBool());
  EXPECT_FALSE(*a->items()[4].AsBool());
  EXPECT_TRUE(a->items()[5].is_null());
  EXPECT_EQ(*v->Find("b")->Find("c")->AsString(), "x\"\\/\b\f\n\r\t");
  EXPECT_EQ(*v->Find("u")->AsString(), "\xC2\xB5s \xF0\x9F\x98\x80");
  EXPECT_EQ(*v->Find("raw")->AsString(), "\xC2\xB5s");
  EXPECT_EQ(v->Find("e")->type(), JsonValue::Type::kObject);
  EXPECT_EQ(v->Find("f")->type(), JsonValue::Type::kArray);
  EXPECT_EQ(v->Find("missing"), nullptr);
}

TEST(JsonParseTest, IntegersAreExactTo64Bits) {
  const rill::StatusOr<JsonValue> v =
      ParseJson("[18446744073709551615, -9223372036854775808, 18446744073709551616]");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v->items()[0].AsUint64(), 18446744073709551615ULL);
  EXPECT_EQ(*v->items()[1].AsInt64(), std::numeric_limits<std::int64_t>::min());
  EXPECT_FALSE(v->items()[1].AsUint64().ok());
  EXPECT_FALSE(v->items()[2].AsUint64().ok());  // Overflow.
}

TEST(JsonParseTest, RejectsEverythingOutsideRfc8259) {
  for (const char* bad : {
           "",
           "   ",
           "[1,]",
           "{\"a\":1,}",
           "[1 2]",
           "{'a': 1}",
           "{\"a\" 1}",
           "// c\n1",
           "01",
           "-",
           "1.",
           ".5",
           "1e",
           "+1",
           "NaN",
           "Infinity",
           "tru",
           "nul",
           "\"unterminated",
           "\"tab\there\"",
           "\"bad \\x escape\"",
           "\"\\u12G4\"",
           "\"\\ud800\"",
           "\"\\udc00\"",
           "\"\\ud800\\u0041\"",
           "\"\xC0\xAF\"",          // Overlong.
           "\"\xED\xA0\x80\"",      // Encoded surrogate.
           "\"\xC2\"",              // Truncated.
           "{\"a\": 1, \"a\": 2}",  // Duplicate key.
           "[1] [2]",
           "[1]x",
       }) {
    EXPECT_FALSE(ParseJson(bad).ok()) << "accepted: " << bad;
  }
  const rill::StatusOr<JsonValue> error = ParseJson("[1, 2,]");
  EXPECT_EQ(error.status().code(), rill::StatusCode::kInvalidArgument);
  EXPECT_NE(error.status().message().find("offset 6"), std::string_view::npos)
      << error.status().message();
}

TEST(JsonParseTest, LimitsNesting) {
  EXPECT_TRUE(ParseJson(std::string(64, '[') + std::string(64, ']')).ok());
  EXPECT_FALSE(ParseJson(std::string(66, '[') + std::string(66, ']')).ok());
  EXPECT_FALSE(ParseJson(std::string(100000, '[')).ok());
}

TEST(JsonValueTest, TypedReadsCheckTheType) {
  const rill::StatusOr<JsonValue> v = ParseJson("[\"1\", 1, \"NaN\", \"+Inf\", \"-Inf\", \"x\"]");
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->items()[0].AsInt64().ok());
  EXPECT_FALSE(v->items()[1].AsString().ok());
  EXPECT_FALSE(v->items()[1].AsBool().ok());
  EXPECT_TRUE(std::isnan(*v->items()[2].AsDouble()));
  EXPECT_EQ(*v->items()[3].AsDouble(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(*v->items()[4].AsDouble(), -std::numeric_limits<double>::infinity());
  EXPECT_FALSE(v->items()[5].AsDouble().ok());
}

TEST(JsonWriterTest, WritesPrettyJsonThatParsesBack) {
  JsonWriter w;
  w.BeginObject();
  w.Key("name");
  w.String("a\"b\\c\n\x01\xC2\xB5");
  w.Key("list");
  w.BeginArray(/*single_line=*/true);
  w.Bool(true);
  w.Null();
  w.Int(-5);
  w.EndArray();
  w.Key("nested");
  w.BeginArray();
  w.Uint(18446744073709551615ULL);
  w.Double(0.1);
  w.Double(1e21);
  w.Double(std::nan(""));
  w.BeginObject();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  const std::string text = w.Take();
  EXPECT_EQ(text,
            "{\n"
            "  \"name\": \"a\\\"b\\\\c\\n\\u0001\xC2\xB5\",\n"
            "  \"list\": [true, null, -5],\n"
            "  \"nested\": [\n"
            "    18446744073709551615,\n"
            "    0.1,\n"
            "    1e+21,\n"
            "    \"NaN\",\n"
            "    {}\n"
            "  ]\n"
            "}\n");
  const rill::StatusOr<JsonValue> v = ParseJson(text);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v->Find("name")->AsString(), "a\"b\\c\n\x01\xC2\xB5");
  EXPECT_EQ(*v->Find("nested")->items()[0].AsUint64(), 18446744073709551615ULL);
  EXPECT_EQ(*v->Find("nested")->items()[1].AsDouble(), 0.1);
}

TEST(JsonWriterTest, DoublesRoundTripExactly) {
  for (double d :
       {0.0, -0.0, 1.0 / 3, 9830.45, 1e-300, 5e-324, 1.7976931348623157e308, 123456789.123456789}) {
    JsonWriter w;
    w.Double(d);
    const rill::StatusOr<JsonValue> v = ParseJson(w.Take());
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v->AsDouble(), d);
    EXPECT_EQ(std::signbit(*v->AsDouble()), std::signbit(d));
  }
}

}  // namespace
}  // namespace rill::bench
