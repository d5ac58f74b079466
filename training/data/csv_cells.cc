#include "training/data/csv_cells.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <system_error>

namespace tuner::training {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::vector<std::string>> split_csv_line(std::string_view line, char delim) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (true) {
    while (i < line.size() && line[i] == ' ' && delim != ' ') ++i;
    std::string field;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        field += line[i++];
      }
      if (!closed) return std::nullopt;
      while (i < line.size() && line[i] != delim) ++i;
    } else {
      const size_t end = std::min(line.find(delim, i), line.size());
      field = std::string(trim(line.substr(i, end - i)));
      i = end;
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) break;
    ++i;  // the delimiter
  }
  return fields;
}

bool is_missing_cell(std::string_view cell) {
  std::string lower;
  for (char c : cell) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.empty() || lower == "na" || lower == "n/a" || lower == "nan";
}

std::optional<double> number_cell(std::string_view cell) {
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  double d = 0;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), d);
  if (ec != std::errc() || end != cell.data() + cell.size() || !std::isfinite(d)) {
    return std::nullopt;
  }
  return d;
}

std::optional<int64_t> integer_cell(std::string_view cell) {
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  int64_t i = 0;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), i);
  if (ec != std::errc() || end != cell.data() + cell.size() || cell.empty()) return std::nullopt;
  return i;
}

}  // namespace tuner::training
