#include "registry/table_input.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>

#include "training/data/csv_cells.h"
#include "trials/error.h"

namespace tuner::registry {

namespace {

namespace fs = std::filesystem;

// The field rules of the engine's csv loader (executor/engine/csv_loader.cc), so that a row
// encodes here as it did in training.

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

[[noreturn]] void refuse(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, what);
}

std::vector<std::string> split_line(std::string_view line, char delim, const std::string& where) {
  std::optional<std::vector<std::string>> fields = training::split_csv_line(line, delim);
  if (!fields) refuse(where + ": a quoted field is not closed on its line");
  return std::move(*fields);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

TableInput read_table_input(const fs::path& file, const TableEncoding& encoding, int64_t limit,
                            char delimiter) {
  if (!fs::exists(file)) {
    throw Error(ErrorCode::kNotFound, file.string() + ": does not exist");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorCode::kNotFound, file.string() + ": cannot be read");
  if (delimiter == 0) {
    const std::string ext = file.extension().string();
    delimiter = ext == ".tsv" || ext == ".tab" || ext == ".TSV" ? '\t' : ',';
  }
  const size_t width = static_cast<size_t>(encoded_width(encoding));
  std::vector<std::string_view> cells;  // a row's values of the encoding's columns

  TableInput out;
  std::vector<std::string> header;
  std::vector<size_t> at;  // each encoding column's field
  std::optional<size_t> label_at;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    const std::string where = file.string() + ":" + std::to_string(line_no);
    std::vector<std::string> fields = split_line(line, delimiter, where);
    if (header.empty()) {
      header = std::move(fields);
      std::vector<std::string> lacking;
      for (const TableColumn& c : encoding.columns) {
        auto it = std::find(header.begin(), header.end(), c.name);
        if (it == header.end()) {
          lacking.push_back("\"" + c.name + "\"");
          continue;
        }
        at.push_back(static_cast<size_t>(it - header.begin()));
      }
      if (!lacking.empty()) {
        std::vector<std::string> names;
        for (const TableColumn& c : encoding.columns) names.push_back(c.name);
        refuse(where + ": the header lacks the feature column" + (lacking.size() > 1 ? "s " : " ") +
               joined(lacking) + " of the model (it takes the columns " + joined(names) +
               " by name; other columns are ignored)");
      }
      if (auto it = std::find(header.begin(), header.end(), encoding.label);
          !encoding.label.empty() && it != header.end()) {
        label_at = static_cast<size_t>(it - header.begin());
      }
      continue;
    }
    if (limit >= 0 && out.count >= limit) break;
    if (fields.size() != header.size()) {
      refuse(where + ": " + std::to_string(fields.size()) + " fields, but the header has " +
             std::to_string(header.size()));
    }
    const size_t base = out.features.size();
    out.features.resize(base + width, 0.0f);
    cells.clear();
    for (size_t k = 0; k < encoding.columns.size(); ++k) cells.push_back(fields[at[k]]);
    encode_table_row(encoding, cells, std::span<float>(out.features).subspan(base, width), where);
    if (label_at) out.labels.push_back(fields[*label_at]);
    out.lines.push_back(line_no);
    ++out.count;
  }
  if (in.bad()) throw Error(ErrorCode::kDataLoss, file.string() + ": read failed");
  if (header.empty() || out.count == 0) {
    refuse(file.string() + ": no rows" + (header.empty() ? "" : " under the header"));
  }
  return out;
}

int64_t encoded_width(const TableEncoding& encoding) {
  int64_t width = 0;
  for (const TableColumn& c : encoding.columns) {
    width += c.categorical && c.embedding == 0
                 ? static_cast<int64_t>(c.categories.size()) + (c.missing_slot ? 1 : 0)
                 : 1;
  }
  return width;
}

void encode_table_row(const TableEncoding& encoding, std::span<const std::string_view> cells,
                      std::span<float> out, const std::string& where) {
  std::fill(out.begin(), out.end(), 0.0f);
  float* x = out.data();
  for (size_t k = 0; k < encoding.columns.size(); ++k) {
    const TableColumn& c = encoding.columns[k];
    const std::string_view v = cells[k];
    const bool missing = training::is_missing_cell(v);
    if (missing && !encoding.missing_mean) {
      refuse(where + ": column \"" + c.name + "\" has no value (\"" + std::string(v) +
             "\"), and the model was trained without data.missing \"mean\"");
    }
    if (!c.categorical) {
      if (missing) {
        *x++ = c.fill;
        continue;
      }
      const std::optional<double> d = training::number_cell(v);
      if (!d)
        refuse(where + ": column \"" + c.name + "\" is numeric, \"" + std::string(v) +
               "\" is not a number");
      *x++ = static_cast<float>(*d);
      continue;
    }
    if (c.embedding > 0) {
      // The category's index, as the engine's csv loader writes it for an embedding.
      auto it = std::lower_bound(c.categories.begin(), c.categories.end(), v);
      *x++ = missing ? (c.missing_slot ? static_cast<float>(c.categories.size()) : -1.0f)
             : it != c.categories.end() && *it == v ? static_cast<float>(it - c.categories.begin())
                                                    : -1.0f;
      continue;
    }
    if (missing) {
      if (c.missing_slot) x[c.categories.size()] = 1.0f;
    } else if (auto it = std::lower_bound(c.categories.begin(), c.categories.end(), v);
               it != c.categories.end() && *it == v) {
      x[it - c.categories.begin()] = 1.0f;
    }  // a category the training split lacked: no slot set, as in training
    x += c.categories.size() + (c.missing_slot ? 1 : 0);
  }
}

int64_t class_index(const std::vector<std::string>& class_labels, std::string_view label) {
  for (size_t k = 0; k < class_labels.size(); ++k) {
    if (class_labels[k] == label) return static_cast<int64_t>(k);
  }
  if (const std::optional<int64_t> i = training::integer_cell(label)) {
    const std::string text = std::to_string(*i);
    for (size_t k = 0; k < class_labels.size(); ++k) {
      if (class_labels[k] == text) return static_cast<int64_t>(k);
    }
  }
  return -1;
}

}  // namespace tuner::registry
