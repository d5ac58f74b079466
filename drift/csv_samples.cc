#include "drift/csv_samples.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "trials/error.h"

namespace tuner::drift {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t comma = line.find(',', at);
    std::string field =
        line.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    field.erase(0, field.find_first_not_of(" \t\r"));
    field.erase(field.find_last_not_of(" \t\r") + 1);
    out.push_back(std::move(field));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

std::optional<double> number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  const char* begin = s.data() + (s.front() == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

Samples read_csv_samples(const std::filesystem::path& path, int64_t limit) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kNotFound, path.string() + ": cannot read");
  Samples out;
  out.source.kind = "csv";
  out.source.path = path.string();
  std::vector<std::string> header;
  int label_column = -1, predicted_column = -1;
  size_t columns = 0;
  bool first = true;
  int64_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::vector<std::string> fields = split(line);
    const std::string where = path.string() + ":" + std::to_string(line_number);
    if (first) {
      first = false;
      columns = fields.size();
      bool numbers = true;
      for (const std::string& f : fields) numbers = numbers && number(f).has_value();
      if (!numbers) {
        header = fields;
        for (size_t c = 0; c < header.size(); ++c) {
          const bool label = header[c] == "label";
          if (!label && header[c] != "predicted") {
            out.input_names.push_back(header[c]);
            continue;
          }
          int& column = label ? label_column : predicted_column;
          if (column >= 0) {
            throw Error(ErrorCode::kInvalidArgument,
                        where + ": columns " + std::to_string(column + 1) + " and " +
                            std::to_string(c + 1) + " are both named '" + header[c] + "'");
          }
          column = static_cast<int>(c);
        }
        continue;
      }
    }
    if (limit >= 0 && out.count >= limit) break;
    if (fields.size() != columns) {
      throw Error(ErrorCode::kInvalidArgument, where + ": " + std::to_string(fields.size()) +
                                                   " columns, the first row has " +
                                                   std::to_string(columns));
    }
    for (size_t c = 0; c < fields.size(); ++c) {
      const std::optional<double> v = number(fields[c]);
      const std::string column =
          "column " + std::to_string(c + 1) + (header.empty() ? "" : " ('" + header[c] + "')");
      if (!v) {
        throw Error(ErrorCode::kInvalidArgument,
                    where + ": " + column + ": '" + fields[c] + "' is not a finite number");
      }
      if (std::abs(*v) > std::numeric_limits<float>::max()) {  // features are held as float32
        throw Error(ErrorCode::kInvalidArgument, where + ": " + column + ": '" + fields[c] +
                                                     "' is not a finite number of float32's range");
      }
      if (static_cast<int>(c) == label_column || static_cast<int>(c) == predicted_column) {
        if (*v < 0 || *v != std::floor(*v) || *v > 2147483647.0) {
          throw Error(ErrorCode::kInvalidArgument, where + ": " + column + ": '" + fields[c] +
                                                       "' is not a class (an integer >= 0)");
        }
        (static_cast<int>(c) == label_column ? out.labels : out.predicted)
            .push_back(static_cast<int32_t>(*v));
      } else {
        out.inputs.push_back(static_cast<float>(*v));
      }
    }
    ++out.count;
  }
  if (out.count == 0) throw Error(ErrorCode::kInvalidArgument, path.string() + ": no rows");
  out.input_width = static_cast<int64_t>(out.inputs.size()) / out.count;
  return out;
}

}  // namespace tuner::drift
