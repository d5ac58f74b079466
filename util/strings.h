// Small string helpers used across the tree; header-only, so that rooms that link nothing of
// the others (training/) may use them.
#ifndef TUNER_UTIL_STRINGS_H_
#define TUNER_UTIL_STRINGS_H_

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace tuner {

// The items (anything convertible to std::string_view) with `separator` between them.
template <typename Range>
std::string join(const Range& items, std::string_view separator = ", ") {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += separator;
    out += std::string_view(item);
    first = false;
  }
  return out;
}

// `text` without the leading and trailing characters of `chars` (by default, whitespace).
inline std::string_view trim(std::string_view text, std::string_view chars = " \t\r\n\f\v") {
  const size_t begin = text.find_first_not_of(chars);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(chars) - begin + 1);
}

// A size in bytes as people read it: "17 bytes", "3 KiB", "1.5 GiB" (one decimal, none when it
// is 0).
inline std::string byte_size_text(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  std::string number = text;
  if (number.ends_with(".0")) number.resize(number.size() - 2);
  return number + " " + units[unit];
}

// A memory size as Slurm and Ray write it: digits, then K, M, G or T for KiB, MiB, GiB or TiB
// ("8G", "512M"), or none for bytes. nullopt for anything else, or a size past int64_t.
inline std::optional<uint64_t> parse_memory_size(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int shift = 0;
  switch (text.back()) {
    case 'K':
      shift = 10;
      break;
    case 'M':
      shift = 20;
      break;
    case 'G':
      shift = 30;
      break;
    case 'T':
      shift = 40;
      break;
    default:
      break;
  }
  if (shift != 0) text.remove_suffix(1);
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      value > (uint64_t{std::numeric_limits<int64_t>::max()} >> shift)) {
    return std::nullopt;
  }
  return value << shift;
}

}  // namespace tuner

#endif  // TUNER_UTIL_STRINGS_H_
