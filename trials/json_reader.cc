#include "trials/json_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

#include "trials/json_depth.h"

namespace tuner {

namespace {

bool is_plain_key(std::string_view key) {
  if (key.empty()) return false;
  if (!(std::isalpha(static_cast<unsigned char>(key[0])) || key[0] == '_')) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
// neighbouring letters each count one.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

template <class Range>
std::optional<std::string> closest_in(std::string_view word, const Range& candidates) {
  std::optional<std::string> best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (std::string_view c : candidates) {
    size_t limit = std::min(word.size(), c.size()) <= 4 ? 1 : 2;
    size_t distance = edit_distance(word, c);
    if (distance <= limit && distance < best_distance && distance > 0) {
      best = std::string(c);
      best_distance = distance;
    }
  }
  return best;
}

std::string json_quoted(std::string_view s) { return Json(std::string(s)).dump(); }

// Follows the parse so that errors raised in the middle of it can name the JSON path, and
// refuses a key repeated within one object (nlohmann would keep the last one silently).
class PathTracker {
 public:
  struct DuplicateKey {
    std::string path;
    std::string key;
  };

  bool on_event(Json::parse_event_t event, const Json& parsed) {
    using E = Json::parse_event_t;
    switch (event) {
      case E::object_start:
        frames_.push_back(Frame{true, {}, 0, {}});
        break;
      case E::array_start:
        frames_.push_back(Frame{false, {}, 0, {}});
        break;
      case E::key: {
        Frame& top = frames_.back();
        const auto& key = parsed.get_ref<const std::string&>();
        if (!top.keys.insert(key).second) throw DuplicateKey{path_above_top(), key};
        top.key = key;
        break;
      }
      case E::value:
        element_done();
        break;
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        element_done();
        break;
    }
    return true;
  }

  // The path of the value being parsed.
  std::string current_path() const {
    std::string path;
    for (const auto& f : frames_) {
      path = f.object ? child_path(path, f.key) : index_path(path, f.index);
    }
    return path;
  }

 private:
  struct Frame {
    bool object;
    std::string key;
    size_t index;
    std::set<std::string> keys;
  };

  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }

  std::string path_above_top() const {
    std::string path;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      const auto& f = frames_[i];
      path = f.object ? child_path(path, f.key) : index_path(path, f.index);
    }
    return path;
  }

  std::vector<Frame> frames_;
};

std::string with_path(std::string_view path, std::string_view message) {
  if (path.empty()) return std::string(message);
  return std::string(path) + ": " + std::string(message);
}

}  // namespace

std::string child_path(std::string_view path, std::string_view key) {
  if (is_plain_key(key)) {
    return path.empty() ? std::string(key) : std::string(path) + "." + std::string(key);
  }
  return std::string(path) + "[" + json_quoted(key) + "]";
}

std::string index_path(std::string_view path, size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

void fail_at(std::string_view path, std::string_view message) {
  throw Error(ErrorCode::kInvalidArgument, with_path(path, message));
}

std::string json_type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a float";
    default:
      return "an unsupported value";
  }
}

std::optional<std::string> closest_match(std::string_view word,
                                         std::initializer_list<std::string_view> candidates) {
  return closest_in(word, candidates);
}

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
  return closest_in(word, candidates);
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  auto match = closest_match(word, candidates);
  return match ? " (did you mean " + json_quoted(*match) + "?)" : "";
}

std::string shown_value(const Json& value) {
  if (value.is_structured() || value.is_null()) return json_type_name(value);
  return value.dump();
}

const Json& expect_object(const Json& value, std::string_view path, std::string_view what) {
  if (!value.is_object()) {
    std::string message = "expected an object";
    if (!what.empty()) message += " (" + std::string(what) + ")";
    fail_at(path, message + ", got " + shown_value(value));
  }
  return value;
}

const Json& expect_array(const Json& value, std::string_view path) {
  if (!value.is_array()) fail_at(path, "expected an array, got " + shown_value(value));
  return value;
}

namespace {

template <class Range>
void check_fields_in(const Json& object, std::string_view path, const Range& allowed,
                     std::string_view context) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string message = "unknown field " + json_quoted(key);
    if (!context.empty()) message += " " + std::string(context);
    if (auto match = closest_in(key, allowed)) {
      message += " (did you mean " + json_quoted(*match) + "?)";
    } else {
      message += " (expected ";
      bool first = true;
      for (auto a : allowed) {
        message += (first ? "" : ", ") + std::string(a);
        first = false;
      }
      message += ")";
    }
    fail_at(path, message);
  }
}

}  // namespace

void check_fields(const Json& object, std::string_view path,
                  std::initializer_list<std::string_view> allowed, std::string_view context) {
  check_fields_in(object, path, allowed, context);
}

void check_fields(const Json& object, std::string_view path,
                  const std::vector<std::string_view>& allowed, std::string_view context) {
  check_fields_in(object, path, allowed, context);
}

const Json* find_field(const Json& object, std::string_view key) {
  auto it = object.find(std::string(key));
  return it == object.end() ? nullptr : &*it;
}

const Json& require_field(const Json& object, std::string_view path, std::string_view key,
                          std::string_view hint) {
  if (const Json* field = find_field(object, key)) return *field;
  fail_at(path, "missing required field " + json_quoted(key) + std::string(hint));
}

double read_number(const Json& value, std::string_view path) {
  if (!value.is_number()) fail_at(path, "expected a number, got " + shown_value(value));
  return value.get<double>();
}

bool is_json_integer(const Json& value) {
  return value.is_number_integer() || value.is_number_unsigned();
}

int64_t read_integer(const Json& value, std::string_view path) {
  static const std::string kRange = " is out of the 64-bit range [" +
                                    std::to_string(std::numeric_limits<int64_t>::min()) + ", " +
                                    std::to_string(std::numeric_limits<int64_t>::max()) + "]";
  if (value.is_number_float()) {
    // The parser reads an integer too large for 64 bits as a float: say what is wrong with it.
    const double x = value.get<double>();
    if (std::isfinite(x) && x == std::trunc(x) && std::abs(x) >= 0x1p63) {
      fail_at(path, "integer " + value.dump() + kRange);
    }
    fail_at(path, "expected an integer, got " + value.dump());
  }
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail_at(path, "integer " + value.dump() + kRange);
    }
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  if (!value.is_number_integer()) fail_at(path, "expected an integer, got " + shown_value(value));
  return value.get<int64_t>();
}

bool read_bool(const Json& value, std::string_view path) {
  if (!value.is_boolean()) fail_at(path, "expected true or false, got " + shown_value(value));
  return value.get<bool>();
}

const std::string& read_string(const Json& value, std::string_view path) {
  if (!value.is_string()) fail_at(path, "expected a string, got " + shown_value(value));
  return value.get_ref<const std::string&>();
}

ParamValue read_scalar(const Json& value, std::string_view path) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>();
  if (is_json_integer(value)) return read_integer(value, path);
  if (value.is_number_float()) return value.get<double>();
  fail_at(path, "expected a string, number or boolean, got " + shown_value(value));
}

namespace {

// A bound for a message: 0 rather than 0.0.
std::string bound_text(double x) {
  if (x == std::floor(x) && std::abs(x) < 1e15) return std::to_string(static_cast<int64_t>(x));
  return Json(x).dump();
}

}  // namespace

std::string NumberRange::describe() const {
  const bool has_low = std::isfinite(low), has_high = std::isfinite(high);
  if (has_low && has_high) {
    return std::string("a number in ") + (low_open ? "(" : "[") + bound_text(low) + ", " +
           bound_text(high) + (high_open ? ")" : "]");
  }
  if (has_low) return std::string("a number ") + (low_open ? "> " : ">= ") + bound_text(low);
  if (has_high) return std::string("a number ") + (high_open ? "< " : "<= ") + bound_text(high);
  return "a finite number";
}

bool NumberRange::contains(double x) const {
  return std::isfinite(x) && (low_open ? x > low : x >= low) && (high_open ? x < high : x <= high);
}

double read_number(const Json& value, std::string_view path, const NumberRange& range) {
  if (!value.is_number() || !range.contains(value.get<double>())) {
    fail_at(path, "expected " + range.describe() + ", got " + shown_value(value));
  }
  return value.get<double>();
}

int64_t read_integer(const Json& value, std::string_view path, int64_t low, int64_t high) {
  const std::string want =
      high >= std::numeric_limits<int>::max()
          ? "an integer >= " + std::to_string(low)
          : "an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "]";
  const bool fits =
      is_json_integer(value) &&
      !(value.is_number_unsigned() &&
        value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) &&
      value.get<int64_t>() >= low && value.get<int64_t>() <= high;
  if (!fits) fail_at(path, "expected " + want + ", got " + shown_value(value));
  return value.get<int64_t>();
}

const std::string& read_nonempty_string(const Json& value, std::string_view path) {
  const std::string& s = read_string(value, path);
  if (s.empty()) fail_at(path, "must not be empty");
  return s;
}

std::string choice_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += json_quoted(names[i]);
  }
  return out;
}

size_t read_choice(const Json& value, std::string_view path,
                   const std::vector<std::string>& names) {
  if (value.is_string()) {
    auto it = std::find(names.begin(), names.end(), value.get_ref<const std::string&>());
    if (it != names.end()) return static_cast<size_t>(it - names.begin());
  }
  std::string message = "expected " + choice_list(names) + ", got " + shown_value(value);
  if (value.is_string()) message += did_you_mean(value.get_ref<const std::string&>(), names);
  fail_at(path, message);
}

Json scalar_to_json(const ParamValue& value) {
  return std::visit([](const auto& v) { return Json(v); }, value);
}

Json parse_json_text(std::string_view text, std::string_view source) {
  check_json_depth(text, source);
  PathTracker tracker;
  try {
    return Json::parse(
        text.begin(), text.end(),
        [&tracker](int, Json::parse_event_t event, Json& parsed) {
          return tracker.on_event(event, parsed);
        },
        /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const PathTracker::DuplicateKey& d) {
    throw Error(
        ErrorCode::kInvalidArgument,
        std::string(source) + ": " + with_path(d.path, "duplicate key " + json_quoted(d.key)));
  } catch (const Json::parse_error& e) {
    static const std::regex kWhere(R"(at line (\d+), column (\d+): (.*))");
    std::string what = e.what();
    std::smatch m;
    if (std::regex_search(what, m, kWhere)) {
      throw Error(ErrorCode::kInvalidArgument, std::string(source) + ":" + m[1].str() + ":" +
                                                   m[2].str() + ": JSON " + m[3].str());
    }
    auto start = what.find("] ");
    throw Error(ErrorCode::kInvalidArgument,
                std::string(source) + ": JSON " +
                    (start == std::string::npos ? what : what.substr(start + 2)));
  } catch (const Json::out_of_range& e) {  // "number overflow parsing '1e400'"
    std::string what = e.what();
    auto quote = what.find('\'');
    std::string number = quote == std::string::npos ? "" : what.substr(quote);
    throw Error(ErrorCode::kInvalidArgument,
                std::string(source) + ": " +
                    with_path(tracker.current_path(),
                              "number " + number + " is too large for a 64-bit float"));
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string(source) + ": " + e.what());
  }
}

std::string read_text_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    throw Error(ErrorCode::kNotFound, "file " + file.string() + " does not exist");
  }
  if (std::filesystem::is_directory(file, ec)) {
    throw Error(ErrorCode::kInvalidArgument, file.string() + " is a directory, not a file");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorCode::kInvalidArgument, "cannot open " + file.string() + " to read");
  std::string contents;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    contents.append(buffer, static_cast<size_t>(in.gcount()));
    if (contents.size() > kMaxJsonFileBytes) {
      throw Error(ErrorCode::kInvalidArgument,
                  file.string() + " is larger than the " + std::to_string(kMaxJsonFileBytes >> 20) +
                      " MiB a sweep, space or import file may have (a sweep file is stored "
                      "whole with its study)");
    }
  }
  if (in.bad()) throw Error(ErrorCode::kInvalidArgument, "cannot read " + file.string());
  return contents;
}

Error with_source(const Error& error, std::string_view source) {
  return Error(error.code(), std::string(source) + ": " + error.what());
}

}  // namespace tuner
