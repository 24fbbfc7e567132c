#include "bench/stats/go_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <system_error>

namespace rill::bench {
namespace {

constexpr std::uint64_t kNanosPerMicro = 1'000;
constexpr std::uint64_t kNanosPerMilli = 1'000'000;
constexpr std::uint64_t kNanosPerSecond = 1'000'000'000;

// "v / 10^precision" with the fraction written out and its trailing zeros removed:
// (1500, 3) -> "1.5", (2000, 3) -> "2".
std::string IntegerAndFraction(std::uint64_t v, int precision) {
  std::uint64_t scale = 1;
  for (int i = 0; i < precision; ++i) {
    scale *= 10;
  }
  std::string out = std::to_string(v / scale);
  std::uint64_t frac = v % scale;
  if (frac == 0) {
    return out;
  }
  std::string digits(static_cast<std::size_t>(precision), '0');
  for (int i = precision - 1; i >= 0; --i) {
    digits[static_cast<std::size_t>(i)] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  while (!digits.empty() && digits.back() == '0') {
    digits.pop_back();
  }
  out += '.';
  out += digits;
  return out;
}

std::string NonFinite(double v) {
  if (std::isnan(v)) {
    return "NaN";
  }
  return v > 0 ? "+Inf" : "-Inf";
}

}  // namespace

std::string GoDurationString(std::chrono::nanoseconds d) {
  const std::int64_t value = d.count();
  const bool negative = value < 0;
  // Unsigned negation is well defined for INT64_MIN too.
  std::uint64_t u = static_cast<std::uint64_t>(value);
  if (negative) {
    u = 0 - u;
  }
  std::string out;
  if (u < kNanosPerSecond) {
    if (u == 0) {
      return "0s";
    }
    if (u < kNanosPerMicro) {
      out = std::to_string(u) + "ns";
    } else if (u < kNanosPerMilli) {
      out = IntegerAndFraction(u, 3) + "\xC2\xB5s";  // U+00B5 MICRO SIGN, as Go writes it.
    } else {
      out = IntegerAndFraction(u, 6) + "ms";
    }
  } else {
    const std::uint64_t total_seconds = u / kNanosPerSecond;
    out = IntegerAndFraction((total_seconds % 60) * kNanosPerSecond + u % kNanosPerSecond, 9) + "s";
    const std::uint64_t total_minutes = total_seconds / 60;
    if (total_minutes > 0) {
      out = std::to_string(total_minutes % 60) + "m" + out;
      const std::uint64_t hours = total_minutes / 60;
      if (hours > 0) {
        out = std::to_string(hours) + "h" + out;
      }
    }
  }
  if (negative) {
    out.insert(out.begin(), '-');
  }
  return out;
}

std::string GoFloatString(double v) {
  if (!std::isfinite(v)) {
    return NonFinite(v);
  }
  const bool negative = std::signbit(v);
  std::string out = negative ? "-" : "";
  if (v == 0) {
    return out + "0";
  }
  // std::to_chars without a precision yields the shortest digits that round-trip, the same
  // digits strconv chooses; only the layout below is Go's own.
  char buf[64];
  const auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), std::fabs(v), std::chars_format::scientific);
  if (ec != std::errc()) {
    return "NaN";  // Unreachable: 64 bytes hold any double.
  }
  const std::string_view sci(buf, static_cast<std::size_t>(end - buf));
  const std::size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') {
      digits += c;
    }
  }
  int exponent = 0;
  const std::string_view exp_text = sci.substr(e_pos + 1);
  std::from_chars(exp_text.data() + (exp_text.front() == '+' ? 1 : 0),
                  exp_text.data() + exp_text.size(), exponent);

  const int num_digits = static_cast<int>(digits.size());
  if (exponent < -4 || exponent >= 6) {
    // %e: d.ddde±XX with at least two exponent digits.
    out += digits[0];
    if (num_digits > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    out += 'e';
    out += exponent < 0 ? '-' : '+';
    const int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude < 10) {
      out += '0';
    }
    out += std::to_string(magnitude);
    return out;
  }
  // %f with exactly the significant digits. decimal_point is where the point goes relative to
  // the first digit: value = 0.d1d2d3... * 10^decimal_point.
  const int decimal_point = exponent + 1;
  if (decimal_point > 0) {
    for (int i = 0; i < decimal_point; ++i) {
      out += i < num_digits ? digits[static_cast<std::size_t>(i)] : '0';
    }
  } else {
    out += '0';
  }
  const int decimals = num_digits - decimal_point;
  if (decimals > 0) {
    out += '.';
    for (int i = 0; i < decimals; ++i) {
      const int j = decimal_point + i;
      out += (j >= 0 && j < num_digits) ? digits[static_cast<std::size_t>(j)] : '0';
    }
  }
  return out;
}

std::string GoFixedString(double v, int precision) {
  if (!std::isfinite(v)) {
    return NonFinite(v);
  }
  // glibc's printf rounds the exact binary value, ties to even, as strconv does.
  const int n = std::snprintf(nullptr, 0, "%.*f", precision, v);
  std::string out(static_cast<std::size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, "%.*f", precision, v);
  return out;
}

std::size_t RuneCount(std::string_view s) {
  std::size_t count = 0;
  for (char c : s) {
    // Count every byte that is not a UTF-8 continuation byte.
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++count;
    }
  }
  return count;
}

std::string GoPadLeft(std::string_view s, std::size_t width) {
  const std::size_t runes = RuneCount(s);
  std::string out;
  if (runes < width) {
    out.assign(width - runes, ' ');
  }
  out += s;
  return out;
}

std::string GoPadRight(std::string_view s, std::size_t width) {
  const std::size_t runes = RuneCount(s);
  std::string out(s);
  if (runes < width) {
    out.append(width - runes, ' ');
  }
  return out;
}

double GoSeconds(std::chrono::nanoseconds d) {
  const std::int64_t ns = d.count();
  const std::int64_t seconds = ns / static_cast<std::int64_t>(kNanosPerSecond);
  const std::int64_t rest = ns % static_cast<std::int64_t>(kNanosPerSecond);
  return static_cast<double>(seconds) + static_cast<double>(rest) / 1e9;
}

std::int64_t GoFloatToInt64(double v) {
  // 2^63 is exactly representable; every double below it (and at or above -2^63) truncates
  // into range.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (!(v >= -kTwoTo63 && v < kTwoTo63)) {
    return std::numeric_limits<std::int64_t>::min();
  }
  return static_cast<std::int64_t>(v);
}

}  // namespace rill::bench
