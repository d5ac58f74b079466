#include "executor/engine/csv_loader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "executor/engine/data_split.h"
#include "executor/job_json.h"
#include "training/data/csv_cells.h"
#include "trials/error.h"
#include "util/strings.h"

namespace tuner::engine {

namespace {

using job_json::fail;

constexpr std::string_view kMissingSlot = "(missing)";

// Numeric labels that are not all integers make classes only when they are this few or fewer;
// more are refused as a likely regression target.
constexpr size_t kMostFractionalClasses = 20;

// One file's header and rows, every field as written (quotes removed).
struct Table {
  std::string file;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int64_t> lines;  // each row's line in the file, 1-based
};

// A place in the data: a row of one of the tables.
struct RowRef {
  const Table* table;
  size_t row;
};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kDataLoss, path + ": " + what);
}

std::string at_line(const Table& t, size_t row) {
  return t.file + ":" + std::to_string(t.lines[row]);
}

// Refuses class labels that do not fit the job's task (at `path`.label): numbers not all integers
// (`fractional`: one such value and where it stands) making more than kMostFractionalClasses
// classes, or a binary task without exactly 2 classes.
void check_classes(const EngineJobSpec& spec, const std::string& path,
                   const std::vector<std::string>& classes,
                   const std::optional<std::pair<std::string, std::string>>& fractional) {
  const std::string& label = spec.files.label;
  if (fractional && classes.size() > kMostFractionalClasses) {
    fail(path + ".label", "column \"" + label + "\" holds " + std::to_string(classes.size()) +
                              " distinct numbers, not all integers (\"" + fractional->first +
                              "\" at " + fractional->second +
                              "): to predict the value, set data.task to \"regression\"; to "
                              "classify, make the labels class names or integers");
  }
  if (spec.task == training::Task::kBinary && classes.size() != 2) {
    fail(path + ".label", "data.task is \"binary\", but column \"" + label + "\" has " +
                              std::to_string(classes.size()) + " distinct label" +
                              (classes.size() == 1 ? "" : "s") + " (" + join(classes) + "), not 2");
  }
}

std::string resolve(const EngineJobSpec& spec, const std::string& file) {
  if (spec.data_dir.empty() || std::filesystem::path(file).is_absolute()) return file;
  return (std::filesystem::path(spec.data_dir) / file).string();
}

char delimiter_of(const EngineJobSpec& spec, const std::string& file) {
  if (spec.files.delimiter != 0) return spec.files.delimiter;
  const std::string ext = std::filesystem::path(file).extension().string();
  return ext == ".tsv" || ext == ".tab" || ext == ".TSV" ? '\t' : ',';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The fields of one line: `delim`-separated, a field in double quotes may hold the delimiter and
// "" for a quote.
std::vector<std::string> split_line(std::string_view line, char delim, const std::string& where,
                                    const std::string& path) {
  std::optional<std::vector<std::string>> fields = training::split_csv_line(line, delim);
  if (!fields) bad(path, where + ": a quoted field is not closed on its line");
  return std::move(*fields);
}

Table read_table(const EngineJobSpec& spec, const std::string& name, const std::string& path) {
  Table t;
  t.file = resolve(spec, name);
  if (!std::filesystem::exists(t.file)) {
    throw Error(ErrorCode::kNotFound, path + ": " + t.file + " does not exist");
  }
  std::ifstream in(t.file, std::ios::binary);
  if (!in) bad(path, t.file + ": cannot be read");
  const char delim = delimiter_of(spec, t.file);
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    const std::string where = t.file + ":" + std::to_string(line_no);
    std::vector<std::string> fields = split_line(line, delim, where, path);
    if (t.header.empty()) {
      t.header = std::move(fields);
      std::set<std::string> seen;
      for (const std::string& h : t.header) {
        if (!seen.insert(h).second)
          bad(path, where + ": the header names column \"" + h + "\" twice");
      }
      continue;
    }
    if (fields.size() != t.header.size()) {
      bad(path, where + ": " + std::to_string(fields.size()) + " fields, but the header has " +
                    std::to_string(t.header.size()));
    }
    t.rows.push_back(std::move(fields));
    t.lines.push_back(line_no);
  }
  if (in.bad()) bad(path, t.file + ": read failed");
  if (t.rows.empty()) bad(path, t.file + ": no rows under the header");
  return t;
}

size_t column_index(const Table& t, const std::string& name, const std::string& member_path) {
  auto it = std::find(t.header.begin(), t.header.end(), name);
  if (it == t.header.end()) {
    fail(member_path, "\"" + name + "\" is not a column of " + t.file + " (its header has " +
                          join(t.header) + ")");
  }
  return static_cast<size_t>(it - t.header.begin());
}

// One feature column and how it encodes.
struct Column {
  std::string name;
  size_t index;
  bool categorical;
  float fill = 0;                   // numeric: the training split's mean, for a missing value
  std::vector<std::string> values;  // categorical: the training split's categories, sorted
  bool missing_slot = false;        // categorical: a slot for a missing value
  int64_t embedding = 0;            // categorical: > 0, one index slot for an embedding of this dim
};

// The label and feature columns of a header, as data.label, data.columns, data.categorical and
// data.embedding choose them (a column data.embedding names is categorical too).
struct ColumnChoice {
  size_t label = 0;
  std::vector<size_t> features;
  std::vector<bool> categorical;  // per entry of `features`
};

// Throws when a named column is not in `header_only`'s header, or is not a feature column.
ColumnChoice choose_columns(const EngineJobSpec& spec, const Table& header_only,
                            const std::string& path) {
  const EngineDataFiles& f = spec.files;
  ColumnChoice c;
  c.label = column_index(header_only, f.label, path + ".label");
  if (f.columns.empty()) {
    for (size_t i = 0; i < header_only.header.size(); ++i) {
      if (i != c.label) c.features.push_back(i);
    }
  } else {
    for (size_t k = 0; k < f.columns.size(); ++k) {
      const std::string member = path + ".columns[" + std::to_string(k) + "]";
      const size_t i = column_index(header_only, f.columns[k], member);
      if (i == c.label) fail(member, "\"" + f.columns[k] + "\" is the label column");
      c.features.push_back(i);
    }
  }
  if (c.features.empty()) {
    fail(path, header_only.file + " has no feature column besides the label");
  }
  auto require_feature = [&](const std::string& name, const std::string& member) {
    const size_t i = column_index(header_only, name, member);
    if (std::find(c.features.begin(), c.features.end(), i) == c.features.end()) {
      fail(member, "\"" + name + "\" is not a feature column");
    }
  };
  for (size_t k = 0; k < f.categorical.size(); ++k) {
    require_feature(f.categorical[k], path + ".categorical[" + std::to_string(k) + "]");
  }
  for (const auto& [name, dim] : f.embedding) require_feature(name, path + ".embedding." + name);
  for (size_t i : c.features) {
    const std::string& name = header_only.header[i];
    c.categorical.push_back(
        std::find(f.categorical.begin(), f.categorical.end(), name) != f.categorical.end() ||
        std::find_if(f.embedding.begin(), f.embedding.end(),
                     [&](const auto& e) { return e.first == name; }) != f.embedding.end());
  }
  return c;
}

}  // namespace

Splits load_csv(const EngineJobSpec& spec, const SplitSizes& /*sizes*/, const std::string& path) {
  const EngineDataFiles& f = spec.files;
  const Table train_file = read_table(spec, f.path.empty() ? f.train : f.path, path);
  std::optional<Table> test_file;
  if (!f.test.empty()) {
    test_file = read_table(spec, f.test, path);
    if (test_file->header != train_file.header) {
      bad(path, test_file->file + ": its header is not the header of " + train_file.file + " (" +
                    join(train_file.header) + ")");
    }
  }
  std::vector<const Table*> tables = {&train_file};
  if (test_file) tables.push_back(&*test_file);

  // The columns.
  const ColumnChoice chosen = choose_columns(spec, train_file, path);
  const size_t label = chosen.label;
  auto embedding_of = [&](const std::string& name) -> int64_t {
    for (const auto& [n, dim] : f.embedding) {
      if (n == name) return dim;
    }
    return 0;
  };

  // Every value is checked in file order: a missing label always, a missing feature without
  // data.missing "mean"; the columns whose values are not all numbers are categorical.
  std::vector<Column> columns;
  for (size_t k = 0; k < chosen.features.size(); ++k) {
    const size_t i = chosen.features[k];
    columns.push_back(
        Column{.name = train_file.header[i], .index = i, .categorical = chosen.categorical[k]});
  }
  const bool regression = spec.task == training::Task::kRegression;
  bool all_integer_labels = true, all_number_labels = true;
  std::optional<RowRef> fractional_label;  // the first label that is a number but no integer
  for (const Table* t : tables) {
    for (size_t r = 0; r < t->rows.size(); ++r) {
      const std::vector<std::string>& row = t->rows[r];
      if (training::is_missing_cell(row[label])) {
        bad(path, at_line(*t, r) + ": column \"" + f.label + "\" (the label) has no value (\"" +
                      row[label] + "\")");
      }
      if (!training::integer_cell(row[label])) {
        all_integer_labels = false;
        if (!training::number_cell(row[label])) {
          all_number_labels = false;
          if (regression) {
            bad(path, at_line(*t, r) + ": column \"" + f.label +
                          "\" (the label of data.task \"regression\") is not a number (\"" +
                          row[label] + "\")");
          }
        } else if (!fractional_label) {
          fractional_label = RowRef{t, r};
        }
      }
      for (Column& c : columns) {
        const std::string& v = row[c.index];
        if (training::is_missing_cell(v)) {
          if (!f.missing_mean) {
            bad(path, at_line(*t, r) + ": column \"" + c.name + "\" has no value (\"" + v +
                          "\"): fill it, or set data.missing to \"mean\"");
          }
          c.missing_slot = true;
        } else if (!c.categorical && !training::number_cell(v)) {
          c.categorical = true;
        }
      }
    }
  }

  // The splits, as rows.
  std::vector<RowRef> train_rows, validation_rows, test_rows;
  const SplitIndices split =
      split_indices(static_cast<int64_t>(train_file.rows.size()), f.validation_fraction,
                    test_file ? 0.0 : f.test_fraction, f.split_seed, path);
  for (int64_t i : split.train) train_rows.push_back({&train_file, static_cast<size_t>(i)});
  for (int64_t i : split.validation)
    validation_rows.push_back({&train_file, static_cast<size_t>(i)});
  for (int64_t i : split.test) test_rows.push_back({&train_file, static_cast<size_t>(i)});
  if (test_file) {
    for (size_t r = 0; r < test_file->rows.size(); ++r) test_rows.push_back({&*test_file, r});
  }

  // The classes: every label of the files, sorted (numerically when all are integers).
  std::vector<std::string> classes;
  if (!regression) {
    std::set<std::string> names;
    std::set<int64_t> ints;
    for (const Table* t : tables) {
      for (const auto& row : t->rows) {
        if (all_integer_labels)
          ints.insert(*training::integer_cell(row[label]));
        else
          names.insert(row[label]);
      }
    }
    if (all_integer_labels) {
      for (int64_t i : ints) classes.push_back(std::to_string(i));
    } else {
      classes.assign(names.begin(), names.end());
    }
  }
  if (!regression) {
    std::optional<std::pair<std::string, std::string>> fractional;
    if (all_number_labels && fractional_label) {
      const RowRef& r = *fractional_label;
      fractional.emplace(r.table->rows[r.row][label], at_line(*r.table, r.row));
    }
    check_classes(spec, path, classes, fractional);
  }
  std::map<std::string, int32_t> class_of;
  for (size_t k = 0; k < classes.size(); ++k) class_of[classes[k]] = static_cast<int32_t>(k);
  auto label_of = [&](const std::string& v) {
    return class_of.at(all_integer_labels ? std::to_string(*training::integer_cell(v)) : v);
  };

  // The encoding, from the training split: numeric fills (means), categories.
  std::vector<std::string> features;
  for (Column& c : columns) {
    if (c.categorical) {
      c.embedding = embedding_of(c.name);
      if (c.embedding == 0) c.embedding = f.embedding_all;
      std::set<std::string> values;
      for (const RowRef& r : train_rows) {
        const std::string& v = r.table->rows[r.row][c.index];
        if (!training::is_missing_cell(v)) values.insert(v);
      }
      c.values.assign(values.begin(), values.end());
      if (c.embedding > 0) {
        features.push_back(c.name);  // the category's index
        continue;
      }
      for (const std::string& v : c.values) features.push_back(c.name + "=" + v);
      if (c.missing_slot) features.push_back(c.name + "=" + std::string(kMissingSlot));
    } else {
      double sum = 0;
      int64_t n = 0;
      for (const RowRef& r : train_rows) {
        const std::string& v = r.table->rows[r.row][c.index];
        if (!training::is_missing_cell(v)) sum += *training::number_cell(v), ++n;
      }
      if (c.missing_slot && n == 0) {
        bad(path, train_file.file + ": column \"" + c.name +
                      "\" has no value in the training split to take the mean of");
      }
      c.fill = n > 0 ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
      features.push_back(c.name);
    }
  }
  const auto width = static_cast<int64_t>(features.size());

  auto encode = [&](const std::vector<RowRef>& rows) {
    std::vector<float> x(rows.size() * static_cast<size_t>(width), 0.0f);
    std::vector<int32_t> y;
    std::vector<float> targets;
    y.reserve(rows.size());
    for (size_t k = 0; k < rows.size(); ++k) {
      const std::vector<std::string>& row = rows[k].table->rows[rows[k].row];
      float* out = x.data() + k * static_cast<size_t>(width);
      for (const Column& c : columns) {
        const std::string& v = row[c.index];
        if (!c.categorical) {
          *out++ =
              training::is_missing_cell(v) ? c.fill : static_cast<float>(*training::number_cell(v));
          continue;
        }
        auto it = std::lower_bound(c.values.begin(), c.values.end(), v);
        const bool known = it != c.values.end() && *it == v;
        if (c.embedding > 0) {
          // The category's index; a missing value's is the last; -1 for one the training split
          // lacks (its embedding is zeros, as its one-hot slots would be).
          *out++ = training::is_missing_cell(v) ? static_cast<float>(c.values.size())
                   : known                      ? static_cast<float>(it - c.values.begin())
                                                : -1.0f;
          continue;
        }
        const size_t slots = c.values.size() + (c.missing_slot ? 1 : 0);
        if (training::is_missing_cell(v)) {
          out[c.values.size()] = 1.0f;
        } else if (known) {
          out[it - c.values.begin()] = 1.0f;
        }  // a category the training split lacks: all zeros
        out += slots;
      }
      if (regression) {
        targets.push_back(static_cast<float>(*training::number_cell(row[label])));
      } else {
        y.push_back(label_of(row[label]));
      }
    }
    if (regression) {
      return training::Dataset::regression(training::Shape{width}, std::move(x), std::move(targets),
                                           1);
    }
    return training::Dataset(training::Shape{width}, std::move(x), std::move(y),
                             static_cast<int32_t>(classes.size()));
  };

  Splits s;
  s.name = std::filesystem::path(train_file.file).filename().string();
  s.train = encode(train_rows);
  if (!validation_rows.empty()) s.validation = encode(validation_rows);
  if (!test_rows.empty()) s.test = encode(test_rows);
  s.class_names = std::move(classes);
  if (regression) s.target_names = {f.label};
  s.features = std::move(features);
  for (const Column& c : columns) {
    s.columns.push_back(FeatureColumn{.name = c.name,
                                      .categorical = c.categorical,
                                      .fill = c.fill,
                                      .categories = c.values,
                                      .missing_slot = c.categorical && c.missing_slot,
                                      .embedding = c.categorical ? c.embedding : 0});
  }
  return s;
}

namespace {

// A file's path when it is absolute (data.dir applied) and opens on this host; else nullopt.
std::optional<std::string> readable_here(const EngineJobSpec& spec, const std::string& name) {
  const std::string file = resolve(spec, name);
  if (!std::filesystem::path(file).is_absolute()) return std::nullopt;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return std::nullopt;
  if (!std::ifstream(file, std::ios::binary)) return std::nullopt;
  return file;
}

// What one pass over the cells of the files tells (read_csv_shape).
struct CellScan {
  std::string first_file;           // the training file
  std::vector<std::string> header;  // its header
  size_t label = 0;
  std::vector<size_t> features;
  std::vector<bool> categorical;  // per entry of `features`
  bool all_integer_labels = true, all_number_labels = true;
  std::optional<std::string> fractional_label, fractional_at;  // the first, and its line
  std::set<int64_t> ints;
  std::set<std::string> names;
};

// One file's rows into `scan`; the first file read sets the columns.
void scan_file(const EngineJobSpec& spec, const std::string& file, const std::string& path,
               CellScan& scan) {
  std::ifstream in(file, std::ios::binary);
  const char delim = delimiter_of(spec, file);
  const bool regression = spec.task == training::Task::kRegression;
  const std::string& label_name = spec.files.label;
  std::string line;
  int64_t line_no = 0, rows = 0;
  bool header = true;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    const std::string where = file + ":" + std::to_string(line_no);
    std::vector<std::string> fields = split_line(line, delim, where, path);
    if (header) {
      header = false;
      if (scan.header.empty()) {
        std::set<std::string> seen;
        for (const std::string& h : fields) {
          if (!seen.insert(h).second) {
            bad(path, where + ": the header names column \"" + h + "\" twice");
          }
        }
        scan.first_file = file;
        scan.header = fields;
        ColumnChoice chosen = choose_columns(spec, Table{.file = file, .header = fields}, path);
        scan.label = chosen.label;
        scan.features = std::move(chosen.features);
        scan.categorical = std::move(chosen.categorical);
      } else if (fields != scan.header) {
        bad(path, file + ": its header is not the header of " + scan.first_file + " (" +
                      join(scan.header) + ")");
      }
      continue;
    }
    if (fields.size() != scan.header.size()) {
      bad(path, where + ": " + std::to_string(fields.size()) + " fields, but the header has " +
                    std::to_string(scan.header.size()));
    }
    ++rows;
    const std::string& label = fields[scan.label];
    if (training::is_missing_cell(label)) {
      bad(path,
          where + ": column \"" + label_name + "\" (the label) has no value (\"" + label + "\")");
    }
    if (auto i = training::integer_cell(label)) {
      if (!regression && scan.all_integer_labels) scan.ints.insert(*i);
    } else {
      scan.all_integer_labels = false;
      if (!training::number_cell(label)) {
        scan.all_number_labels = false;
        if (regression) {
          bad(path, where + ": column \"" + label_name +
                        "\" (the label of data.task \"regression\") is not a number (\"" + label +
                        "\")");
        }
      } else if (!scan.fractional_label) {
        scan.fractional_label = label;
        scan.fractional_at = where;
      }
    }
    if (!regression) scan.names.insert(label);
    for (size_t k = 0; k < scan.features.size(); ++k) {
      const std::string& v = fields[scan.features[k]];
      if (!scan.categorical[k] && !training::is_missing_cell(v) && !training::number_cell(v)) {
        scan.categorical[k] = true;
      }
    }
  }
  if (in.bad()) bad(path, file + ": read failed");
  if (rows == 0) bad(path, file + ": no rows under the header");
}

}  // namespace

std::optional<DataShape> read_csv_shape(const EngineJobSpec& spec, const std::string& path) {
  const EngineDataFiles& f = spec.files;
  std::vector<std::string> files;
  for (const std::string* name : {f.path.empty() ? &f.train : &f.path, &f.test}) {
    if (name->empty()) continue;
    std::optional<std::string> file = readable_here(spec, *name);
    if (!file) return std::nullopt;
    files.push_back(std::move(*file));
  }
  CellScan scan;
  for (const std::string& file : files) scan_file(spec, file, path, scan);

  DataShape shape{.name = std::filesystem::path(files.front()).filename().string(),
                  .task = spec.task};
  if (std::find(scan.categorical.begin(), scan.categorical.end(), true) == scan.categorical.end()) {
    shape.sample = training::Shape{static_cast<int64_t>(scan.features.size())};
  }
  if (spec.task == training::Task::kRegression) {
    shape.targets = 1;
    return shape;
  }
  std::vector<std::string> classes;
  if (scan.all_integer_labels) {
    for (int64_t i : scan.ints) classes.push_back(std::to_string(i));
  } else {
    classes.assign(scan.names.begin(), scan.names.end());
  }
  std::optional<std::pair<std::string, std::string>> fractional;
  if (scan.all_number_labels && scan.fractional_label) {
    fractional.emplace(*scan.fractional_label, *scan.fractional_at);
  }
  check_classes(spec, path, classes, fractional);
  shape.classes = static_cast<int32_t>(classes.size());
  return shape;
}

void read_csv_embedding(const nlohmann::json& value, const std::string& path, EngineDataFiles& f) {
  auto dim = [](const nlohmann::json& v, const std::string& member) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1) {
      fail(member,
           "expected an integer >= 1 (the dimension of the column's embedding), got " + v.dump());
    }
    return v.get<int64_t>();
  };
  if (value.is_number()) {
    f.embedding_all = dim(value, path);
    return;
  }
  if (!value.is_object()) {
    fail(path,
         "expected an integer (the dimension of every categorical column's embedding) or "
         "an object of column names to dimensions, got " +
             value.dump());
  }
  for (const auto& [name, v] : value.items()) {
    if (name == "*") {
      f.embedding_all = dim(v, path + ".*");
    } else {
      f.embedding.emplace_back(name, dim(v, path + "." + name));
    }
  }
}

}  // namespace tuner::engine
