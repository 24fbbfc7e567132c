#include "bench/benchmain/go_flags.h"

#include <cctype>
#include <cmath>
#include <limits>

namespace rill::bench {
namespace {

rill::Status Invalid(std::string_view what, std::string_view element) {
  return rill::Status(rill::StatusCode::kInvalidArgument,
                      std::string(what) + " \"" + std::string(element) + "\"");
}

// Nanoseconds per unit, or 0 for an unknown unit.
double UnitNanos(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1e3;  // µ U+00B5, U+03BC
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  if (unit == "m") return 60e9;
  if (unit == "h") return 3600e9;
  return 0;
}

}  // namespace

std::vector<std::string> NormalizeGoFlags(int argc, const char* const* argv) {
  std::vector<std::string> out;
  out.reserve(argc > 0 ? static_cast<std::size_t>(argc) : 0);
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!flags_done && arg == "--") {
      flags_done = true;
    } else if (!flags_done && (arg == "-h" || arg == "-help")) {
      arg = "--help";
    } else if (!flags_done && arg.size() >= 2 && arg[0] == '-' && arg[1] != '-' &&
               std::isalpha(static_cast<unsigned char>(arg[1])) != 0) {
      arg.insert(0, 1, '-');
    }
    out.push_back(std::move(arg));
  }
  return out;
}

std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  if (s.empty()) return std::nullopt;
  double total = 0;
  while (!s.empty()) {
    std::size_t i = 0;
    double value = 0;
    bool digits = false;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) {
      value = value * 10 + (s[i] - '0');
      digits = true;
      ++i;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      double scale = 0.1;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) {
        value += (s[i] - '0') * scale;
        scale /= 10;
        digits = true;
        ++i;
      }
    }
    if (!digits) return std::nullopt;
    std::size_t unit_end = i;
    while (unit_end < s.size() && s[unit_end] != '.' &&
           std::isdigit(static_cast<unsigned char>(s[unit_end])) == 0) {
      ++unit_end;
    }
    const double nanos = UnitNanos(s.substr(i, unit_end - i));
    if (nanos == 0) return std::nullopt;
    total += value * nanos;
    s.remove_prefix(unit_end);
  }
  if (total > static_cast<double>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  const auto ns = static_cast<std::int64_t>(std::llround(total));
  return std::chrono::nanoseconds(negative ? -ns : ns);
}

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.emplace_back(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

rill::StatusOr<std::vector<std::chrono::nanoseconds>> ParseDurationList(std::string_view text) {
  std::vector<std::chrono::nanoseconds> out;
  for (const std::string& element : SplitList(text)) {
    std::optional<std::chrono::nanoseconds> d = ParseGoDuration(element);
    if (!d) return Invalid("not a duration:", element);
    out.push_back(*d);
  }
  return out;
}

rill::StatusOr<std::vector<std::int64_t>> ParseIntList(std::string_view text) {
  std::vector<std::int64_t> out;
  for (const std::string& element : SplitList(text)) {
    std::size_t used = 0;
    std::int64_t v = 0;
    try {
      v = std::stoll(element, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != element.size()) return Invalid("not an integer:", element);
    out.push_back(v);
  }
  return out;
}

rill::StatusOr<std::vector<bool>> ParseToggle(std::string_view text) {
  if (text == "off") return std::vector<bool>{false};
  if (text == "on") return std::vector<bool>{true};
  if (text == "both") return std::vector<bool>{false, true};
  return Invalid("want off, on or both, got", text);
}

}  // namespace rill::bench
