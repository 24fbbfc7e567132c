#include "bench/stats/json.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>
#include <utility>

namespace rill::bench {
namespace {

constexpr int kMaxDepth = 64;

rill::Status TypeError(std::string_view expected) {
  return rill::Status(rill::StatusCode::kInvalidArgument,
                      "JSON value is not " + std::string(expected));
}

bool IsIntegerText(std::string_view text) {
  return text.find_first_of(".eE") == std::string_view::npos;
}

void AppendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  rill::StatusOr<JsonValue> ParseDocument() {
    SkipWhitespace();
    rill::StatusOr<JsonValue> value = ParseValue(0);
    if (!value.ok()) {
      return value;
    }
    SkipWhitespace();
    if (pos_ != text_.size()) {
      return Error("unexpected characters after the JSON value");
    }
    return value;
  }

 private:
  rill::Status Error(std::string_view what) const {
    return rill::Status(
        rill::StatusCode::kInvalidArgument,
        "invalid JSON at offset " + std::to_string(pos_) + ": " + std::string(what));
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  void SkipWhitespace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      ++pos_;
    }
  }

  bool Consume(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) == literal) {
      pos_ += literal.size();
      return true;
    }
    return false;
  }

  rill::StatusOr<JsonValue> ParseValue(int depth) {
    if (depth > kMaxDepth) {
      return Error("nesting deeper than 64 levels");
    }
    if (AtEnd()) {
      return Error("unexpected end of input");
    }
    switch (Peek()) {
      case '{':
        return ParseObject(depth);
      case '[':
        return ParseArray(depth);
      case '"': {
        rill::StatusOr<std::string> s = ParseString();
        if (!s.ok()) {
          return s.status();
        }
        return JsonValue::String(std::move(*s));
      }
      case 't':
        if (Consume("true")) {
          return JsonValue::Bool(true);
        }
        return Error("invalid literal");
      case 'f':
        if (Consume("false")) {
          return JsonValue::Bool(false);
        }
        return Error("invalid literal");
      case 'n':
        if (Consume("null")) {
          return JsonValue::Null();
        }
        return Error("invalid literal");
      default:
        return ParseNumber();
    }
  }

  rill::StatusOr<JsonValue> ParseObject(int depth) {
    ++pos_;  // '{'
    std::vector<JsonMember> members;
    SkipWhitespace();
    if (!AtEnd() && Peek() == '}') {
      ++pos_;
      return JsonValue::Object(std::move(members));
    }
    while (true) {
      SkipWhitespace();
      if (AtEnd() || Peek() != '"') {
        return Error("expected a string key");
      }
      const std::size_t key_pos = pos_;
      rill::StatusOr<std::string> key = ParseString();
      if (!key.ok()) {
        return key.status();
      }
      for (const JsonMember& m : members) {
        if (m.key == *key) {
          pos_ = key_pos;
          return Error("duplicate key \"" + *key + "\"");
        }
      }
      SkipWhitespace();
      if (AtEnd() || Peek() != ':') {
        return Error("expected ':'");
      }
      ++pos_;
      SkipWhitespace();
      rill::StatusOr<JsonValue> value = ParseValue(depth + 1);
      if (!value.ok()) {
        return value;
      }
      members.push_back(JsonMember{std::move(*key), std::move(*value)});
      SkipWhitespace();
      if (AtEnd()) {
        return Error("unterminated object");
      }
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return JsonValue::Object(std::move(members));
      }
      return Error("expected ',' or '}'");
    }
  }

  rill::StatusOr<JsonValue> ParseArray(int depth) {
    ++pos_;  // '['
    std::vector<JsonValue> items;
    SkipWhitespace();
    if (!AtEnd() && Peek() == ']') {
      ++pos_;
      return JsonValue::Array(std::move(items));
    }
    while (true) {
      SkipWhitespace();
      rill::StatusOr<JsonValue> value = ParseValue(depth + 1);
      if (!value.ok()) {
        return value;
      }
      items.push_back(std::move(*value));
      SkipWhitespace();
      if (AtEnd()) {
        return Error("unterminated array");
      }
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return JsonValue::Array(std::move(items));
      }
      return Error("expected ',' or ']'");
    }
  }

  rill::StatusOr<std::uint32_t> ParseHex4() {
    if (text_.size() - pos_ < 4) {
      return Error("truncated \\u escape");
    }
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        --pos_;
        return Error("invalid hex digit in \\u escape");
      }
    }
    return v;
  }

  // Validates one UTF-8 sequence starting at pos_ (a byte >= 0x80) and copies it to `out`.
  bool CopyUtf8Sequence(std::string& out) {
    const auto b0 = static_cast<unsigned char>(text_[pos_]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    std::uint32_t min = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
      cp = b0 & 0x1F;
      min = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      cp = b0 & 0x0F;
      min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      cp = b0 & 0x07;
      min = 0x10000;
    } else {
      return false;
    }
    if (text_.size() - pos_ < len) {
      return false;
    }
    for (std::size_t i = 1; i < len; ++i) {
      const auto b = static_cast<unsigned char>(text_[pos_ + i]);
      if ((b & 0xC0) != 0x80) {
        return false;
      }
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    out.append(text_.substr(pos_, len));
    pos_ += len;
    return true;
  }

  rill::StatusOr<std::string> ParseString() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (AtEnd()) {
        return Error("unterminated string");
      }
      const char c = Peek();
      const auto uc = static_cast<unsigned char>(c);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (uc < 0x20) {
        return Error("unescaped control character in string");
      }
      if (uc >= 0x80) {
        if (!CopyUtf8Sequence(out)) {
          return Error("invalid UTF-8 in string");
        }
        continue;
      }
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (AtEnd()) {
        return Error("unterminated escape");
      }
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          rill::StatusOr<std::uint32_t> high = ParseHex4();
          if (!high.ok()) {
            return high.status();
          }
          std::uint32_t cp = *high;
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return Error("lone low surrogate in \\u escape");
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!Consume("\\u")) {
              return Error("high surrogate without a low surrogate");
            }
            rill::StatusOr<std::uint32_t> low = ParseHex4();
            if (!low.ok()) {
              return low.status();
            }
            if (*low < 0xDC00 || *low > 0xDFFF) {
              return Error("high surrogate without a low surrogate");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (*low - 0xDC00);
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          --pos_;
          return Error("invalid escape");
      }
    }
  }

  rill::StatusOr<JsonValue> ParseNumber() {
    const std::size_t start = pos_;
    auto digit = [this] { return !AtEnd() && Peek() >= '0' && Peek() <= '9'; };
    if (!AtEnd() && Peek() == '-') {
      ++pos_;
    }
    if (!digit()) {
      return Error("invalid value");
    }
    if (Peek() == '0') {
      ++pos_;
      if (digit()) {
        return Error("leading zero in number");
      }
    } else {
      while (digit()) {
        ++pos_;
      }
    }
    if (!AtEnd() && Peek() == '.') {
      ++pos_;
      if (!digit()) {
        return Error("expected a digit after '.'");
      }
      while (digit()) {
        ++pos_;
      }
    }
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      ++pos_;
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) {
        ++pos_;
      }
      if (!digit()) {
        return Error("expected a digit in the exponent");
      }
      while (digit()) {
        ++pos_;
      }
    }
    return JsonValue::Number(std::string(text_.substr(start, pos_ - start)));
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

JsonValue::JsonValue() = default;
JsonValue::~JsonValue() = default;
JsonValue::JsonValue(const JsonValue&) = default;
JsonValue::JsonValue(JsonValue&&) noexcept = default;
JsonValue& JsonValue::operator=(const JsonValue&) = default;
JsonValue& JsonValue::operator=(JsonValue&&) noexcept = default;

JsonValue JsonValue::Null() { return JsonValue(); }

JsonValue JsonValue::Bool(bool b) {
  JsonValue v;
  v.type_ = Type::kBool;
  v.bool_ = b;
  return v;
}

JsonValue JsonValue::Number(std::string text) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.text_ = std::move(text);
  return v;
}

JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.type_ = Type::kString;
  v.text_ = std::move(s);
  return v;
}

JsonValue JsonValue::Array(std::vector<JsonValue> items) {
  JsonValue v;
  v.type_ = Type::kArray;
  v.items_ = std::move(items);
  return v;
}

JsonValue JsonValue::Object(std::vector<JsonMember> members) {
  JsonValue v;
  v.type_ = Type::kObject;
  v.members_ = std::move(members);
  return v;
}

std::span<const JsonValue> JsonValue::items() const { return items_; }

std::span<const JsonMember> JsonValue::members() const { return members_; }

rill::StatusOr<bool> JsonValue::AsBool() const {
  if (type_ != Type::kBool) {
    return TypeError("a boolean");
  }
  return bool_;
}

rill::StatusOr<std::uint64_t> JsonValue::AsUint64() const {
  std::uint64_t v = 0;
  if (type_ != Type::kNumber || !IsIntegerText(text_) || text_[0] == '-') {
    return TypeError("an unsigned integer");
  }
  const auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (ec != std::errc() || end != text_.data() + text_.size()) {
    return TypeError("an unsigned 64-bit integer");
  }
  return v;
}

rill::StatusOr<std::int64_t> JsonValue::AsInt64() const {
  std::int64_t v = 0;
  if (type_ != Type::kNumber || !IsIntegerText(text_)) {
    return TypeError("an integer");
  }
  const auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (ec != std::errc() || end != text_.data() + text_.size()) {
    return TypeError("a 64-bit integer");
  }
  return v;
}

rill::StatusOr<double> JsonValue::AsDouble() const {
  if (type_ == Type::kString) {
    if (text_ == "NaN") {
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (text_ == "+Inf") {
      return std::numeric_limits<double>::infinity();
    }
    if (text_ == "-Inf") {
      return -std::numeric_limits<double>::infinity();
    }
    return TypeError("a number");
  }
  if (type_ != Type::kNumber) {
    return TypeError("a number");
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (ec != std::errc() || end != text_.data() + text_.size()) {
    return TypeError("a finite double");
  }
  return v;
}

rill::StatusOr<std::string> JsonValue::AsString() const {
  if (type_ != Type::kString) {
    return TypeError("a string");
  }
  return text_;
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const JsonMember& m : members_) {
    if (m.key == key) {
      return &m.value;
    }
  }
  return nullptr;
}

rill::StatusOr<JsonValue> ParseJson(std::string_view text) { return Parser(text).ParseDocument(); }

std::string JsonQuote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    const auto uc = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (uc < 0x20) {
          out += "\\u00";
          out += kHex[uc >> 4];
          out += kHex[uc & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

void JsonWriter::NewLine() {
  out_ += '\n';
  out_.append(2 * stack_.size(), ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) {
    return;
  }
  Level& level = stack_.back();
  if (!level.empty) {
    out_ += ',';
  }
  if (level.single_line) {
    if (!level.empty) {
      out_ += ' ';
    }
  } else {
    NewLine();
  }
  level.empty = false;
}

void JsonWriter::BeginObject() {
  BeforeValue();
  out_ += '{';
  stack_.push_back(Level{true, false});
}

void JsonWriter::EndObject() {
  const bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) {
    NewLine();
  }
  out_ += '}';
}

void JsonWriter::BeginArray(bool single_line) {
  BeforeValue();
  out_ += '[';
  stack_.push_back(Level{false, single_line});
}

void JsonWriter::EndArray() {
  const Level level = stack_.back();
  stack_.pop_back();
  if (!level.empty && !level.single_line) {
    NewLine();
  }
  out_ += ']';
}

void JsonWriter::Key(std::string_view key) {
  Level& level = stack_.back();
  if (!level.empty) {
    out_ += ',';
  }
  NewLine();
  level.empty = false;
  out_ += JsonQuote(key);
  out_ += ": ";
  after_key_ = true;
}

void JsonWriter::String(std::string_view s) {
  BeforeValue();
  out_ += JsonQuote(s);
}

void JsonWriter::Bool(bool b) {
  BeforeValue();
  out_ += b ? "true" : "false";
}

void JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
}

void JsonWriter::Int(std::int64_t v) {
  BeforeValue();
  out_ += std::to_string(v);
}

void JsonWriter::Uint(std::uint64_t v) {
  BeforeValue();
  out_ += std::to_string(v);
}

void JsonWriter::Double(double v) {
  if (std::isnan(v)) {
    String("NaN");
    return;
  }
  if (std::isinf(v)) {
    String(v > 0 ? "+Inf" : "-Inf");
    return;
  }
  BeforeValue();
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out_.append(buf, static_cast<std::size_t>(end - buf));
}

std::string JsonWriter::Take() {
  std::string out = std::move(out_);
  out += '\n';
  out_.clear();
  stack_.clear();
  after_key_ = false;
  return out;
}

}  // namespace rill::bench
