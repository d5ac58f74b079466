#include "drift/request_log.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <tuple>

#include "trials/error.h"

namespace tuner::drift {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// A line that is not a well-formed request: the message says what is wrong with it.
struct BadLine {
  std::string message;
};

// What the first accepted request fixed, and what every later one must match.
struct Layout {
  bool known = false;
  int64_t input_width = -1;   // -1 until a request with samples shows it
  int64_t output_width = -1;  // -1 until shown; 0: the log has no outputs
  bool has_outputs = false;
  bool has_predicted = false;
};

std::string type_name(const Json& v) { return v.type_name(); }

// [[numbers], ...] of `count` rows of `width` values (width < 0: the first row sets it).
void read_rows(const Json& rows, const char* field, size_t count, int64_t& width,
               std::vector<float>& out) {
  if (!rows.is_array()) {
    throw BadLine{std::string("\"") + field + "\" must be an array of samples, not " +
                  type_name(rows)};
  }
  if (rows.size() != count) {
    throw BadLine{std::string("\"") + field + "\" has " + std::to_string(rows.size()) +
                  " samples, \"inputs\" " + std::to_string(count)};
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const Json& row = rows[i];
    const std::string where = std::string(field) + "[" + std::to_string(i) + "]";
    if (!row.is_array()) {
      throw BadLine{where + " must be an array of numbers (one sample, flattened), not " +
                    type_name(row)};
    }
    if (width < 0) width = static_cast<int64_t>(row.size());
    if (static_cast<int64_t>(row.size()) != width) {
      throw BadLine{where + " has " + std::to_string(row.size()) + " values, the log's earlier " +
                    "samples " + std::to_string(width)};
    }
    for (size_t k = 0; k < row.size(); ++k) {
      const Json& v = row[k];
      // Held as float32: a number past its range is not finite there.
      if (!v.is_number() || !(std::abs(v.get<double>()) <= std::numeric_limits<float>::max())) {
        throw BadLine{where + "[" + std::to_string(k) + "] is " +
                      (v.is_number() ? v.dump() : type_name(v)) +
                      ", not a finite number (of float32's range)"};
      }
      out.push_back(v.get<float>());
    }
  }
}

bool present(const Json& record, const char* field) {
  auto it = record.find(field);
  return it != record.end() && !it->is_null();
}

// Appends one request's samples to `out` (all or nothing: a BadLine leaves `out` as it was).
void read_request(const Json& record, Layout& layout, Samples& out) {
  if (!record.is_object()) throw BadLine{"a request is a JSON object, not " + type_name(record)};
  if (!present(record, "inputs")) throw BadLine{"no \"inputs\""};
  const Json& inputs = record["inputs"];
  if (!inputs.is_array()) {
    throw BadLine{"\"inputs\" must be an array of samples, not " + type_name(inputs)};
  }
  const bool has_outputs = present(record, "outputs");
  const bool has_predicted = present(record, "predicted");
  if (layout.known && has_outputs != layout.has_outputs) {
    throw BadLine{layout.has_outputs ? "no \"outputs\", where the log's earlier requests have them"
                                     : "\"outputs\", where the log's earlier requests have none"};
  }
  if (layout.known && has_predicted != layout.has_predicted) {
    throw BadLine{layout.has_predicted
                      ? "no \"predicted\", where the log's earlier requests have it"
                      : "\"predicted\", where the log's earlier requests have none"};
  }
  if (present(record, "time") && !record["time"].is_string()) {
    throw BadLine{"\"time\" must be a string (UTC ISO-8601), not " + type_name(record["time"])};
  }
  Layout next = layout;
  next.known = true;
  next.has_outputs = has_outputs;
  next.has_predicted = has_predicted;
  std::vector<float> in, outs;
  read_rows(inputs, "inputs", inputs.size(), next.input_width, in);
  if (has_outputs) read_rows(record["outputs"], "outputs", inputs.size(), next.output_width, outs);
  std::vector<int32_t> predicted;
  if (has_predicted) {
    const Json& p = record["predicted"];
    if (!p.is_array() || p.size() != inputs.size()) {
      throw BadLine{"\"predicted\" must be an array of " + std::to_string(inputs.size()) +
                    " classes (one per sample of \"inputs\")"};
    }
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].is_number_integer() || p[i].get<int64_t>() < 0 || p[i].get<int64_t>() > INT32_MAX) {
        throw BadLine{"predicted[" + std::to_string(i) + "] is " + p[i].dump() +
                      ", not a class (an integer >= 0)"};
      }
      predicted.push_back(p[i].get<int32_t>());
    }
  }
  layout = next;
  out.inputs.insert(out.inputs.end(), in.begin(), in.end());
  out.outputs.insert(out.outputs.end(), outs.begin(), outs.end());
  out.predicted.insert(out.predicted.end(), predicted.begin(), predicted.end());
  out.count += static_cast<int64_t>(inputs.size());
  if (present(record, "time")) {
    if (out.source.first_time.empty()) out.source.first_time = record["time"].get<std::string>();
    out.source.last_time = record["time"].get<std::string>();
  }
  std::string model = present(record, "model") && record["model"].is_string()
                          ? record["model"].get<std::string>()
                          : "";
  if (present(record, "version")) model += " version " + record["version"].dump();
  if (!model.empty() && std::find(out.source.models.begin(), out.source.models.end(), model) ==
                            out.source.models.end()) {
    out.source.models.push_back(model);
  }
}

// Drops the samples past `limit` (the last request read may hold more than were wanted).
void truncate(Samples& s, int64_t limit) {
  if (limit < 0 || s.count <= limit) return;
  s.inputs.resize(static_cast<size_t>(limit * s.input_width));
  if (s.output_width > 0) s.outputs.resize(static_cast<size_t>(limit * s.output_width));
  if (!s.predicted.empty()) s.predicted.resize(static_cast<size_t>(limit));
  s.count = limit;
}

}  // namespace

std::vector<fs::path> request_log_files(const fs::path& dir) {
  static const std::regex kName(R"(requests-(\d{8}T\d{6})-(\d+)\.jsonl)");
  std::vector<std::tuple<std::string, uint64_t, fs::path>> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !std::regex_match(name, m, kName)) continue;
    found.emplace_back(m[1].str(), std::stoull(m[2].str()), e.path());
  }
  if (ec) throw Error(ErrorCode::kNotFound, dir.string() + ": cannot list: " + ec.message());
  if (found.empty()) {
    throw Error(ErrorCode::kNotFound,
                dir.string() +
                    ": no request log files (requests-<UTC yyyymmddTHHMMSS>-<seq>.jsonl, "
                    "as tuner serve-model writes them)");
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> files;
  for (auto& f : found) files.push_back(std::get<2>(f));
  return files;
}

Samples read_request_log(const fs::path& path, const RequestLogOptions& options) {
  if (!fs::exists(path))
    throw Error(ErrorCode::kNotFound, path.string() + ": no such file or directory");
  const std::vector<fs::path> files =
      fs::is_directory(path) ? request_log_files(path) : std::vector<fs::path>{path};
  Samples out;
  out.source.kind = "request log";
  out.source.path = path.string();
  Layout layout;
  for (const fs::path& file : files) {
    if (options.limit >= 0 && out.count >= options.limit) break;
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(ErrorCode::kNotFound, file.string() + ": cannot read");
    ++out.source.files;
    int64_t line_number = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_number;
      if (options.limit >= 0 && out.count >= options.limit) break;
      const bool terminated = !in.eof();
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      const std::string where = file.string() + ":" + std::to_string(line_number);
      try {
        Json record;
        try {
          record = Json::parse(line);
        } catch (
            const Json::exception& e) {  // parse_error, or out_of_range: a number past double's
          if (!terminated) {
            out.notes.push_back(where +
                                ": the last line has no newline and is not JSON: left out "
                                "(a request being written)");
            break;
          }
          std::string why = e.what();
          if (const size_t at = why.find("] ");
              why.starts_with("[json.exception") && at != std::string::npos) {
            why = why.substr(at + 2);
          }
          throw BadLine{"not JSON: " + why};
        }
        read_request(record, layout, out);
        ++out.source.requests;
      } catch (const BadLine& bad) {
        if (out.source.skipped_lines >= options.skip_bad) {
          throw Error(
              ErrorCode::kInvalidArgument,
              where + ": " + bad.message +
                  (options.skip_bad > 0 ? " (more than --skip-bad " +
                                              std::to_string(options.skip_bad) + " malformed lines)"
                                        : ""));
        }
        ++out.source.skipped_lines;
        if (out.source.skipped_lines <= 3) out.notes.push_back(where + ": skipped: " + bad.message);
      }
    }
    if (in.bad()) throw Error(ErrorCode::kUnavailable, file.string() + ": read error");
  }
  if (out.source.skipped_lines > 3) {
    out.notes.push_back(std::to_string(out.source.skipped_lines) +
                        " malformed lines skipped in all");
  }
  if (out.count == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                path.string() + ": no logged samples (" + std::to_string(out.source.requests) +
                    " requests in " + std::to_string(out.source.files) + " files)");
  }
  out.input_width = layout.input_width;
  out.output_width = layout.has_outputs ? std::max<int64_t>(layout.output_width, 0) : 0;
  truncate(out, options.limit);
  return out;
}

}  // namespace tuner::drift
