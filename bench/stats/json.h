// A small JSON writer and a strict JSON parser (RFC 8259) for benchmark result files.
//
//   rill::bench::JsonWriter w;
//   w.BeginObject();
//   w.Key("TotalOps");
//   w.Uint(24490);
//   w.EndObject();
//   std::string text = w.Take();            // "{\n  \"TotalOps\": 24490\n}\n"
//
//   rill::StatusOr<rill::bench::JsonValue> v = rill::bench::ParseJson(text);
//   const rill::bench::JsonValue* ops = v->Find("TotalOps");
//   rill::StatusOr<std::uint64_t> n = ops->AsUint64();
//
// The parser accepts exactly RFC 8259 JSON: no comments, trailing commas, single quotes,
// leading zeros, NaN literals or duplicate object keys, and at most 64 levels of nesting.
// Numbers keep their text so that 64-bit integers read back exactly.
//
// Value types; thread-compatible.
#ifndef RILL_BENCH_STATS_JSON_H_
#define RILL_BENCH_STATS_JSON_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/status.h"
#include "rill/status_or.h"

namespace rill::bench {

struct JsonMember;

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  // Special members are defined out of line, where JsonMember is complete.
  JsonValue();
  ~JsonValue();
  JsonValue(const JsonValue&);
  JsonValue(JsonValue&&) noexcept;
  JsonValue& operator=(const JsonValue&);
  JsonValue& operator=(JsonValue&&) noexcept;

  static JsonValue Null();
  static JsonValue Bool(bool b);
  // `text` must be a valid JSON number.
  static JsonValue Number(std::string text);
  static JsonValue String(std::string s);
  static JsonValue Array(std::vector<JsonValue> items);
  static JsonValue Object(std::vector<JsonMember> members);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }

  // Typed reads; an error names the expected type.
  rill::StatusOr<bool> AsBool() const;
  // An integer literal (no fraction or exponent) that fits.
  rill::StatusOr<std::uint64_t> AsUint64() const;
  rill::StatusOr<std::int64_t> AsInt64() const;
  // Any number, or one of the strings "NaN", "+Inf", "-Inf" (JSON has no literal for them).
  rill::StatusOr<double> AsDouble() const;
  rill::StatusOr<std::string> AsString() const;

  // Raw access; empty unless the type matches.
  const std::string& text() const { return text_; }  // Number text or string value.
  std::span<const JsonValue> items() const;
  std::span<const JsonMember> members() const;

  // The member named `key` of an object, or nullptr.
  const JsonValue* Find(std::string_view key) const;

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  std::string text_;
  std::vector<JsonValue> items_;
  std::vector<JsonMember> members_;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

// Parses one JSON text (surrounding whitespace allowed). Errors are kInvalidArgument with the
// byte offset.
rill::StatusOr<JsonValue> ParseJson(std::string_view text);

// Writes pretty-printed JSON (two-space indent). Calls must form a valid document: keys only
// directly inside objects, one value per key, one top-level value.
class JsonWriter {
 public:
  JsonWriter() = default;

  void BeginObject();
  void EndObject();
  // Arrays opened with `single_line` put all their items on one line.
  void BeginArray(bool single_line = false);
  void EndArray();
  void Key(std::string_view key);
  void String(std::string_view s);
  void Bool(bool b);
  void Null();
  void Int(std::int64_t v);
  void Uint(std::uint64_t v);
  // Shortest text that reads back as v; NaN and infinities as the strings "NaN", "+Inf", "-Inf".
  void Double(double v);

  // The document, ending with a newline.
  std::string Take();

 private:
  struct Level {
    bool is_object;
    bool single_line;
    bool empty = true;
  };
  void BeforeValue();
  void NewLine();
  void Raw(std::string_view s) { out_ += s; }

  std::string out_;
  std::vector<Level> stack_;
  bool after_key_ = false;
};

// `s` as a quoted JSON string: escapes '"', '\\' and control characters; other bytes are copied.
std::string JsonQuote(std::string_view s);

}  // namespace rill::bench

#endif  // RILL_BENCH_STATS_JSON_H_
