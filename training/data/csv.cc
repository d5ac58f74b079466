#include "training/data/csv.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <string_view>
#include <vector>

namespace tuner::training {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

bool parse_float(std::string_view s, float& out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty() && std::isfinite(out);
}

void split(std::string_view line, char delim, std::vector<std::string_view>& fields) {
  fields.clear();
  size_t start = 0;
  while (true) {
    const size_t at = line.find(delim, start);
    fields.push_back(trim(line.substr(start, at == std::string_view::npos ? at : at - start)));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
}

}  // namespace

Dataset read_csv(const std::string& path, const CsvOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open");
  std::vector<float> features;
  std::vector<int32_t> labels;
  std::vector<std::string_view> fields;
  std::string line;
  int64_t line_no = 0, columns = -1, label_col = 0;
  int32_t max_label = -1;
  bool first = true;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    split(line, options.delimiter, fields);
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    if (columns < 0) {
      columns = static_cast<int64_t>(fields.size());
      if (columns < 2) {
        throw DataError(where + "expected a label column and feature columns separated by '" +
                        std::string(1, options.delimiter) + "', got " + std::to_string(columns) +
                        " column");
      }
      label_col = options.label_column >= 0 ? options.label_column : columns + options.label_column;
      if (label_col < 0 || label_col >= columns) {
        throw DataError(where + "label column " + std::to_string(options.label_column) +
                        " is outside the " + std::to_string(columns) + " columns");
      }
    }
    if (first) {
      first = false;
      float ignored;
      const bool header = options.header == CsvOptions::Header::kYes ||
                          (options.header == CsvOptions::Header::kAuto &&
                           static_cast<int64_t>(fields.size()) == columns &&
                           !parse_float(fields[label_col], ignored));
      if (header) continue;
    }
    if (static_cast<int64_t>(fields.size()) != columns) {
      throw DataError(where + "expected " + std::to_string(columns) +
                      " columns (as the first row), got " + std::to_string(fields.size()));
    }
    for (int64_t c = 0; c < columns; ++c) {
      const std::string_view f = fields[c];
      float v = 0.0f;
      if (!parse_float(f, v)) {
        throw DataError(where + "column " + std::to_string(c + 1) + ": \"" + std::string(f) +
                        "\" is not a number");
      }
      if (c == label_col) {
        if (v < 0.0f || v != std::floor(v) || v > 1e9f ||
            (options.num_classes > 0 && v >= static_cast<float>(options.num_classes))) {
          throw DataError(
              where + "column " + std::to_string(c + 1) + ": label \"" + std::string(f) +
              "\" is not an integer in [0, " +
              (options.num_classes > 0 ? std::to_string(options.num_classes) : std::string("inf")) +
              ")");
        }
        labels.push_back(static_cast<int32_t>(v));
        max_label = std::max(max_label, labels.back());
      } else {
        features.push_back(v);
      }
    }
  }
  if (in.bad()) throw DataError(path + ": read error");
  if (labels.empty()) throw DataError(path + ": no data rows");
  Shape sample = options.sample_shape.rank() == 0 ? Shape{columns - 1} : options.sample_shape;
  if (sample.numel() != columns - 1) {
    throw DataError(path + ": sample shape " + sample.to_string() + " does not hold the " +
                    std::to_string(columns - 1) + " feature columns");
  }
  const int32_t classes = options.num_classes > 0 ? options.num_classes : max_label + 1;
  return Dataset(sample, std::move(features), std::move(labels), classes);
}

}  // namespace tuner::training
