#include "serving/scoring_protocol.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "registry/table_input.h"
#include "serving/bounded_json.h"
#include "serving/json_text.h"
#include "serving/numeric_json.h"
#include "trials/error.h"

namespace tuner::serving {

namespace {

// ordered_json: a data frame record's columns keep the order the client wrote them in. Its
// objects are searched key by key: look keys up only in objects known to be small.
using Json = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& message) { throw ScoringError(400, message); }

std::string numbers_of(const training::Shape& input) {
  return input.to_string() + " (or " + std::to_string(input.numel()) + " numbers)";
}

const char* kind_of(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    default:
      return "a number";
  }
}

// Where a value is, written out only when there is an error to report: a payload holds
// thousands of values and building each one's path would cost more than reading it.
struct Path {
  const std::string* root = nullptr;  // the first part, e.g. "inputs[3]"
  const Path* parent = nullptr;       // set for every part but the first
  size_t index = 0;                   // [index] after the parent

  Path at(size_t i) const { return {nullptr, this, i}; }
  std::string operator()() const {
    if (parent == nullptr) return *root;
    return (*parent)() + "[" + std::to_string(index) + "]";
  }
};

template <class Where>
float number_at(const Json& v, const Where& where) {
  if (!v.is_number()) bad(where() + ": " + kind_of(v) + ", expected a number");
  const double d = v.get<double>();
  if (!std::isfinite(static_cast<float>(d))) {
    bad(where() + ": " + v.dump() + " is out of float32's range");
  }
  return static_cast<float>(d);
}

// Appends the values of a nested array of `input`'s shape from dimension `dim` on.
void append_nested(const Json& v, const training::Shape& input, int dim, const Path& path,
                   std::vector<float>& out) {
  if (dim == input.rank()) {
    out.push_back(number_at(v, path));
    return;
  }
  if (!v.is_array() || static_cast<int64_t>(v.size()) != input[dim]) {
    bad(path() + ": " + (v.is_array() ? std::to_string(v.size()) + " values" : kind_of(v)) +
        " where the input's shape " + input.to_string() + " has " + std::to_string(input[dim]));
  }
  for (size_t i = 0; i < v.size(); ++i) append_nested(v[i], input, dim + 1, path.at(i), out);
}

// One sample: nested in the input's shape, or its values flattened.
void append_sample(const Json& sample, const training::Shape& input, const std::string& where,
                   std::vector<float>& out) {
  const int64_t numel = input.numel();
  const Path path{&where};
  // Flattened: as many values as the input has, none of them an array.
  if (sample.is_array() && static_cast<int64_t>(sample.size()) == numel &&
      (input.rank() <= 1 ||
       std::none_of(sample.begin(), sample.end(), [](const Json& x) { return x.is_array(); }))) {
    for (size_t i = 0; i < sample.size(); ++i) out.push_back(number_at(sample[i], path.at(i)));
    return;
  }
  if (input.rank() == 0) {
    out.push_back(number_at(sample, path));
    return;
  }
  if (!sample.is_array()) {
    bad(where + ": " + kind_of(sample) + ", expected a sample of shape " + numbers_of(input));
  }
  append_nested(sample, input, 0, path, out);
}

// "inputs"/"instances": a batch of samples, a named tensor {"input": batch}, or (instances) rows
// of named tensors [{"input": sample}, ...].
ScoringInput parse_tensor(const Json& v, PayloadForm form, const training::Shape& input,
                          std::string_view input_name) {
  const std::string field = to_string(form);
  const std::string name(input_name);
  ScoringInput in;
  in.form = form;
  const Json* batch = &v;
  std::string path = field;
  if (v.is_object()) {
    if (v.size() != 1 || !v.contains(name)) {
      bad(field + ": named tensors must be exactly {\"" + name +
          "\": [...]}, the model's one input");
    }
    batch = &v[name];
    path += "." + name;
  }
  if (!batch->is_array() || batch->empty()) {
    bad(path + ": " + (batch->is_array() ? std::string("no samples") : kind_of(*batch)) +
        ", expected a list of samples of shape " + numbers_of(input));
  }
  in.values.reserve(batch->size() * static_cast<size_t>(input.numel()));
  for (size_t i = 0; i < batch->size(); ++i) {
    const Json& sample = (*batch)[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (form == PayloadForm::kInstances && sample.is_object() && batch == &v) {
      if (sample.size() != 1 || !sample.contains(name)) {
        bad(at + ": a row of named tensors must be {\"" + name + "\": sample}");
      }
      append_sample(sample[name], input, at + "." + name, in.values);
    } else {
      append_sample(sample, input, at, in.values);
    }
  }
  in.rows = static_cast<int64_t>(batch->size());
  return in;
}

// A dataframe_split body is an object of columns, data and (ignored) index.
void check_split_fields(const Json& v) {
  if (!v.is_object())
    bad(std::string("dataframe_split: ") + kind_of(v) +
        ", expected {\"columns\": [...], \"data\": [[...], ...]}");
  for (const auto& [key, _] : v.items()) {
    if (key != "columns" && key != "data" && key != "index") {
      bad("dataframe_split." + key + ": unknown field (the fields are columns, data and index)");
    }
  }
}

ScoringInput parse_split(const Json& v, const training::Shape& input) {
  const int64_t numel = input.numel();
  check_split_fields(v);
  if (v.contains("columns")) {
    const Json& columns = v["columns"];
    if (!columns.is_array() || static_cast<int64_t>(columns.size()) != numel) {
      bad("dataframe_split.columns: " +
          (columns.is_array() ? std::to_string(columns.size()) + " columns"
                              : std::string(kind_of(columns))) +
          ", the model takes " + std::to_string(numel) + " values per row (its input " +
          input.to_string() + " flattened)");
    }
  }
  if (!v.contains("data") || !v["data"].is_array() || v["data"].empty()) {
    bad("dataframe_split.data: " +
        std::string(v.contains("data") ? (v["data"].is_array() ? "no rows" : kind_of(v["data"]))
                                       : "missing") +
        ", expected rows of " + std::to_string(numel) + " numbers");
  }
  const Json& data = v["data"];
  ScoringInput in;
  in.form = PayloadForm::kDataframeSplit;
  in.values.reserve(data.size() * static_cast<size_t>(numel));
  for (size_t r = 0; r < data.size(); ++r) {
    const std::string at = "dataframe_split.data[" + std::to_string(r) + "]";
    const Json& row = data[r];
    if (!row.is_array() || static_cast<int64_t>(row.size()) != numel) {
      bad(at + ": " +
          (row.is_array() ? std::to_string(row.size()) + " values" : std::string(kind_of(row))) +
          ", expected a row of " + std::to_string(numel) + " numbers (the input " +
          input.to_string() + " flattened)");
    }
    for (size_t c = 0; c < row.size(); ++c) {
      in.values.push_back(number_at(row[c], [&] { return at + "[" + std::to_string(c) + "]"; }));
    }
  }
  in.rows = static_cast<int64_t>(data.size());
  return in;
}

ScoringInput parse_records(const Json& v, const training::Shape& input) {
  const int64_t numel = input.numel();
  if (!v.is_array() || v.empty()) {
    bad("dataframe_records: " + std::string(v.is_array() ? "no records" : kind_of(v)) +
        ", expected a list of records {\"column\": value, ...} of " + std::to_string(numel) +
        " columns");
  }
  // The first record's columns, in its order, are the columns of every record; a record's
  // values are placed by a hashed look-up of their column (linear in the columns).
  std::vector<std::string_view> columns;
  std::unordered_map<std::string_view, size_t> column_of;
  std::vector<size_t> seen;  // per column: 1 + the last record that had it
  ScoringInput in;
  in.form = PayloadForm::kDataframeRecords;
  in.values.reserve(v.size() * static_cast<size_t>(numel));
  for (size_t r = 0; r < v.size(); ++r) {
    const std::string at = "dataframe_records[" + std::to_string(r) + "]";
    const Json& record = v[r];
    if (!record.is_object() || static_cast<int64_t>(record.size()) != numel) {
      bad(at + ": " +
          (record.is_object() ? std::to_string(record.size()) + " columns"
                              : std::string(kind_of(record))) +
          ", expected a record of " + std::to_string(numel) + " columns (the input " +
          input.to_string() + " flattened)");
    }
    if (r == 0) {
      column_of.reserve(record.size());
      for (const auto& entry : record.get_ref<const Json::object_t&>()) {
        const std::string& key = entry.first;  // not a structured binding: lambdas capture it
        const Json& value = entry.second;
        if (!column_of.emplace(key, columns.size()).second) {
          bad(at + ": column '" + key + "' twice");
        }
        columns.push_back(key);
        in.values.push_back(number_at(value, [&] { return at + "." + key; }));
      }
      seen.assign(columns.size(), 1);
      continue;
    }
    const size_t base = in.values.size();
    in.values.resize(base + columns.size());
    for (const auto& entry : record.get_ref<const Json::object_t&>()) {
      const std::string& key = entry.first;
      const Json& value = entry.second;
      const auto it = column_of.find(key);
      if (it == column_of.end() || seen[it->second] == r + 1) continue;  // a column missed below
      seen[it->second] = r + 1;
      in.values[base + it->second] = number_at(value, [&] { return at + "." + key; });
    }
    for (size_t c = 0; c < columns.size(); ++c) {
      if (seen[c] != r + 1) {
        bad(at + ": no column '" + std::string(columns[c]) + "', which the first record has");
      }
    }
  }
  in.rows = static_cast<int64_t>(v.size());
  return in;
}

// A table's data frame: the encoding's columns by name.

std::string table_columns(const registry::TableEncoding& table) {
  std::string out;
  for (const registry::TableColumn& c : table.columns) out += (out.empty() ? "" : ", ") + c.name;
  return "the model takes the columns " + out + " by name; other columns are ignored";
}

// A value as a table's cell holds it: a string as it is, a number as its shortest text, null as
// missing (""); `text` holds a number's text.
std::string_view cell_of(const Json& v, std::string& text, const std::string& where,
                         const std::string& column) {
  switch (v.type()) {
    case Json::value_t::string:
      return v.get_ref<const std::string&>();
    case Json::value_t::null:
      return {};
    case Json::value_t::number_integer:
      text = std::to_string(v.get<int64_t>());
      return text;
    case Json::value_t::number_unsigned:
      text = std::to_string(v.get<uint64_t>());
      return text;
    case Json::value_t::number_float: {
      char buf[32];
      const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.get<double>());
      text.assign(buf, ec == std::errc() ? end : buf);
      return text;
    }
    default:
      bad(where + "." + column + ": " + kind_of(v) + ", expected a string, a number or null");
  }
}

// Encodes the row whose feature columns' values are `values` (one per encoding column) into
// in.values.
void append_table_row(const registry::TableEncoding& table, int64_t width,
                      std::span<const Json* const> values, const std::string& where,
                      ScoringInput& in) {
  std::vector<std::string> numbers(values.size());
  std::vector<std::string_view> cells(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    cells[k] = cell_of(*values[k], numbers[k], where, table.columns[k].name);
  }
  const size_t base = in.values.size();
  in.values.resize(base + static_cast<size_t>(width));
  try {
    registry::encode_table_row(
        table, cells, std::span<float>(in.values).subspan(base, static_cast<size_t>(width)), where);
  } catch (const Error& e) {
    bad(e.what());
  }
}

ScoringInput parse_table_split(const Json& v, const registry::TableEncoding& table) {
  const int64_t width = registry::encoded_width(table);
  check_split_fields(v);
  if (!v.contains("columns") || !v["columns"].is_array()) {
    bad("dataframe_split.columns: " +
        std::string(v.contains("columns") ? kind_of(v["columns"]) : "missing") +
        ", expected the columns' names (" + table_columns(table) + ")");
  }
  const Json& columns = v["columns"];
  std::vector<size_t> at;  // each encoding column's place in a row
  for (const registry::TableColumn& c : table.columns) {
    std::optional<size_t> found;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (!columns[i].is_string() || columns[i].get_ref<const std::string&>() != c.name) continue;
      if (found) bad("dataframe_split.columns: column \"" + c.name + "\" twice");
      found = i;
    }
    if (!found) {
      bad("dataframe_split.columns: no feature column \"" + c.name + "\" (" + table_columns(table) +
          ")");
    }
    at.push_back(*found);
  }
  if (!v.contains("data") || !v["data"].is_array() || v["data"].empty()) {
    bad("dataframe_split.data: " +
        std::string(v.contains("data") ? (v["data"].is_array() ? "no rows" : kind_of(v["data"]))
                                       : "missing") +
        ", expected rows of " + std::to_string(columns.size()) + " values, one per column");
  }
  const Json& data = v["data"];
  ScoringInput in;
  in.form = PayloadForm::kDataframeSplit;
  in.values.reserve(data.size() * static_cast<size_t>(width));
  std::vector<const Json*> values(at.size());
  for (size_t r = 0; r < data.size(); ++r) {
    const std::string where = "dataframe_split.data[" + std::to_string(r) + "]";
    const Json& row = data[r];
    if (!row.is_array() || row.size() != columns.size()) {
      bad(where + ": " +
          (row.is_array() ? std::to_string(row.size()) + " values" : std::string(kind_of(row))) +
          ", expected a row of " + std::to_string(columns.size()) + " values, one per column");
    }
    for (size_t k = 0; k < at.size(); ++k) values[k] = &row[at[k]];
    append_table_row(table, width, values, where, in);
  }
  in.rows = static_cast<int64_t>(data.size());
  return in;
}

ScoringInput parse_table_records(const Json& v, const registry::TableEncoding& table) {
  const int64_t width = registry::encoded_width(table);
  if (!v.is_array() || v.empty()) {
    bad("dataframe_records: " + std::string(v.is_array() ? "no records" : kind_of(v)) +
        ", expected a list of records {\"column\": value, ...} (" + table_columns(table) + ")");
  }
  std::unordered_map<std::string_view, size_t> column_of;  // feature column -> encoding index
  for (size_t k = 0; k < table.columns.size(); ++k) column_of.emplace(table.columns[k].name, k);
  ScoringInput in;
  in.form = PayloadForm::kDataframeRecords;
  in.values.reserve(v.size() * static_cast<size_t>(width));
  std::vector<const Json*> values(table.columns.size());
  for (size_t r = 0; r < v.size(); ++r) {
    const std::string where = "dataframe_records[" + std::to_string(r) + "]";
    const Json& record = v[r];
    if (!record.is_object()) {
      bad(where + ": " + kind_of(record) + ", expected a record {\"column\": value, ...}");
    }
    std::fill(values.begin(), values.end(), nullptr);
    for (const auto& entry : record.get_ref<const Json::object_t&>()) {
      const std::string& key = entry.first;
      const Json& value = entry.second;
      const auto it = column_of.find(key);
      if (it == column_of.end()) continue;  // a column the model does not take
      if (values[it->second] != nullptr) bad(where + ": column \"" + key + "\" twice");
      values[it->second] = &value;
    }
    for (size_t k = 0; k < values.size(); ++k) {
      if (values[k] == nullptr) {
        bad(where + ": no feature column \"" + table.columns[k].name + "\" (" +
            table_columns(table) + ")");
      }
    }
    append_table_row(table, width, values, where, in);
  }
  in.rows = static_cast<int64_t>(v.size());
  return in;
}

bool parse_float(std::string_view field, float& out) {
  while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) field.remove_prefix(1);
  while (!field.empty() && (field.back() == ' ' || field.back() == '\t' || field.back() == '\r')) {
    field.remove_suffix(1);
  }
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  if (field.empty()) return false;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
  return ec == std::errc() && end == field.data() + field.size() && std::isfinite(out);
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t begin = 0;
  for (;;) {
    const size_t comma = line.find(',', begin);
    fields.push_back(
        line.substr(begin, comma == std::string_view::npos ? line.npos : comma - begin));
    if (comma == std::string_view::npos) return fields;
    begin = comma + 1;
  }
}

ScoringInput parse_csv(std::string_view body, const training::Shape& input, int64_t max_values) {
  const int64_t numel = input.numel();
  ScoringInput in;
  in.form = PayloadForm::kCsv;
  size_t begin = 0;
  int line_number = 0;
  bool first = true;
  while (begin < body.size()) {
    size_t end = body.find('\n', begin);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(begin, end - begin);
    begin = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::vector<std::string_view> fields = split_fields(line);
    const std::string at = "csv line " + std::to_string(line_number);
    if (first) {
      first = false;
      // A header: names that are not all numbers, or pandas' default names 0, 1, ..., n-1
      // (DataFrame.to_csv of a frame made from arrays).
      float value;
      bool numbers = true, indices = true;
      for (size_t c = 0; c < fields.size(); ++c) {
        numbers = numbers && parse_float(fields[c], value);
        indices = indices && numbers && value == static_cast<float>(c);
      }
      if (!numbers || (indices && fields.size() > 1)) {
        if (static_cast<int64_t>(fields.size()) != numel) {
          bad(at + " (the header): " + std::to_string(fields.size()) +
              " columns, the model takes " + std::to_string(numel) + " values per row (its input " +
              input.to_string() + " flattened)");
        }
        continue;
      }
    }
    if (static_cast<int64_t>(fields.size()) != numel) {
      bad(at + ": " + std::to_string(fields.size()) + " values, expected " + std::to_string(numel) +
          " (the input " + input.to_string() + " flattened)");
    }
    if (static_cast<int64_t>(in.values.size() + fields.size()) > max_values) {
      throw ScoringError(413, at + ": more than " + std::to_string(max_values) +
                                  " values in the body (the limit on values in one request)");
    }
    for (size_t c = 0; c < fields.size(); ++c) {
      float value;
      if (!parse_float(fields[c], value)) {
        bad(at + ", column " + std::to_string(c + 1) + ": '" + std::string(fields[c]) +
            "' is not a number");
      }
      in.values.push_back(value);
    }
    ++in.rows;
  }
  if (in.rows == 0) bad("csv: no rows of values");
  return in;
}

std::string_view media_type(std::string_view content_type) {
  std::string_view t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  return t;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

// A tensor payload of plain numbers in the input's shape (or flattened), read without a JSON
// tree (serving/numeric_json.h); nullopt for everything else, which the full reader takes.
std::optional<ScoringInput> read_fast(std::string_view body, const training::Shape& input,
                                      int max_depth) {
  std::optional<NumericTensor> t = read_numeric_tensor(body, max_depth);
  if (!t) return std::nullopt;
  const std::span<const int64_t> sample(t->dims.data() + 1, t->dims.size() - 1);
  const std::span<const int64_t> shape = input.dims();
  const bool nested = std::equal(sample.begin(), sample.end(), shape.begin(), shape.end());
  const bool flat = sample.size() == 1 && sample[0] == input.numel();
  if (!nested && !flat) return std::nullopt;
  ScoringInput in;
  in.form = t->field == "inputs" ? PayloadForm::kInputs : PayloadForm::kInstances;
  in.rows = t->dims[0];
  in.values = std::move(t->values);
  return in;
}

}  // namespace

const char* to_string(PayloadForm form) {
  switch (form) {
    case PayloadForm::kInputs:
      return "inputs";
    case PayloadForm::kInstances:
      return "instances";
    case PayloadForm::kDataframeSplit:
      return "dataframe_split";
    case PayloadForm::kDataframeRecords:
      return "dataframe_records";
    case PayloadForm::kCsv:
      return "csv";
  }
  return "?";
}

ScoringInput parse_scoring_request(std::string_view content_type, std::string_view body,
                                   const training::Shape& input, std::string_view input_name,
                                   const JsonLimits& limits, const registry::TableEncoding* table) {
  const std::string_view type = media_type(content_type);
  if (iequals(type, "text/csv")) return parse_csv(body, input, limits.max_values);
  if (!iequals(type, "application/json")) {
    throw ScoringError(415, "content type '" + std::string(content_type) +
                                "' is not served: send application/json or text/csv");
  }
  if (std::optional<ScoringInput> fast = read_fast(body, input, limits.max_depth)) {
    return std::move(*fast);
  }
  const char* kForms = "exactly one of dataframe_split, dataframe_records, instances and inputs";
  static constexpr std::string_view kFields[] = {"inputs", "instances", "dataframe_split",
                                                 "dataframe_records", "params"};
  // A tensor model's record has exactly its input's values as columns, and no other object of a
  // valid body has more than a few keys: a wider object is refused at its first extra key.
  // (A table's records may hold columns the model does not take.)
  JsonLimits bounded = limits;
  const int64_t widest = input.numel() + 8;
  const bool model_bound = table == nullptr && widest < limits.max_object_keys;
  if (model_bound) bounded.max_object_keys = widest;
  Json doc;
  try {
    doc = read_bounded_json(body, bounded, kFields);
  } catch (const BoundedJsonError& e) {
    using Kind = BoundedJsonError::Kind;
    if (e.kind() == Kind::kUnknownKey) {
      bad(std::string(e.what()) + ": the body holds " + kForms + " (and params)");
    }
    if (e.kind() == Kind::kTooManyKeys && model_bound) {
      bad(e.place() + ": an object of more than " + std::to_string(widest) +
          " keys, which no request to this model has (a record has the " +
          std::to_string(input.numel()) + " values of its input " + input.to_string() + ")");
    }
    const bool too_large = e.kind() == Kind::kTooManyKeys || e.kind() == Kind::kTooManyValues;
    throw ScoringError(too_large ? 413 : 400, e.what());
  }
  if (!doc.is_object())
    bad(std::string("the body is ") + kind_of(doc) + ", expected an object with " + kForms);
  const Json* payload = nullptr;
  PayloadForm form{};
  for (const auto& [key, value] : doc.items()) {  // kFields only: read_bounded_json saw to it
    PayloadForm f;
    if (key == "inputs") {
      f = PayloadForm::kInputs;
    } else if (key == "instances") {
      f = PayloadForm::kInstances;
    } else if (key == "dataframe_split") {
      f = PayloadForm::kDataframeSplit;
    } else if (key == "dataframe_records") {
      f = PayloadForm::kDataframeRecords;
    } else {  // params
      if (!value.is_null() && !(value.is_object() && value.empty())) {
        bad("params: this model takes no parameters");
      }
      continue;
    }
    if (payload != nullptr)
      bad(std::string("both ") + to_string(form) + " and " + key + ": send " + kForms);
    payload = &value;
    form = f;
  }
  if (payload == nullptr) bad(std::string("no input: the body holds ") + kForms);
  switch (form) {
    case PayloadForm::kDataframeSplit:
      return table ? parse_table_split(*payload, *table) : parse_split(*payload, input);
    case PayloadForm::kDataframeRecords:
      return table ? parse_table_records(*payload, *table) : parse_records(*payload, input);
    default:
      return parse_tensor(*payload, form, input, input_name);
  }
}

std::string format_predictions(PayloadForm form, std::span<const float> outputs, int64_t rows,
                               std::string_view output_name,
                               std::span<const std::string> class_labels, bool values) {
  const int64_t k = rows > 0 ? static_cast<int64_t>(outputs.size()) / rows : 0;
  const std::string name = json_string(output_name);
  std::string out;
  out.reserve(static_cast<size_t>(rows * (k * 12 + 16) + 32));
  const bool tensor = form == PayloadForm::kInputs || form == PayloadForm::kInstances;
  if (values && !tensor) {
    out += "{\"predictions\": [";
    for (int64_t r = 0; r < rows; ++r) {
      if (r > 0) out += ", ";
      const std::span<const float> row =
          outputs.subspan(static_cast<size_t>(r * k), static_cast<size_t>(k));
      if (k == 1) {
        append_float(out, row[0]);
      } else {
        append_row(out, row);
      }
    }
    return out + "]}";
  }
  const bool labelled =
      !tensor && !class_labels.empty() && static_cast<int64_t>(class_labels.size()) == k && k > 0;
  std::vector<float> p(labelled ? static_cast<size_t>(k) : 0);
  out += tensor ? "{\"predictions\": {" + name + ": [" : std::string("{\"predictions\": [");
  for (int64_t r = 0; r < rows; ++r) {
    if (r > 0) out += ", ";
    if (!tensor) out += "{" + name + ": ";
    const std::span<const float> logits =
        outputs.subspan(static_cast<size_t>(r * k), static_cast<size_t>(k));
    append_row(out, logits);
    if (labelled) {
      // Softmax, shifted by the largest logit, which is also the predicted class.
      const size_t best =
          static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      double sum = 0;
      for (size_t c = 0; c < p.size(); ++c) sum += std::exp(double{logits[c]} - logits[best]);
      for (size_t c = 0; c < p.size(); ++c) {
        p[c] = static_cast<float>(std::exp(double{logits[c]} - logits[best]) / sum);
      }
      out += ", \"probabilities\": ";
      append_row(out, p);
      out += ", \"label\": " + json_string(class_labels[best]);
    }
    if (!tensor) out += '}';
  }
  out += tensor ? "]}}" : "]}";
  return out;
}

std::string format_error(std::string_view error_code, std::string_view message) {
  return "{\"error_code\": " + json_string(error_code) + ", \"message\": " + json_string(message) +
         "}";
}

}  // namespace tuner::serving
