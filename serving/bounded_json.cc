#include "serving/bounded_json.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace tuner::serving {

namespace {

using Json = nlohmann::ordered_json;
using Kind = BoundedJsonError::Kind;

// nlohmann's SAX interface, building the tree as nlohmann's own builder does but appending each
// key to its object without looking for it there first (ordered_map's emplace searches the
// object: quadratic in its keys), and counting against the limits as it goes.
class Builder {
 public:
  Builder(const JsonLimits& limits, std::span<const std::string_view> top_level_keys)
      : limits_(limits), top_level_keys_(top_level_keys) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(Json::number_integer_t v) { return put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(v); }
  bool number_float(Json::number_float_t v, const std::string&) { return put(v); }
  bool string(std::string& v) { return put(std::move(v)); }
  bool binary(Json::binary_t&) { return refuse(Kind::kNotJson, "the body is not JSON"); }
  bool start_object(size_t) { return open(Json::object()); }
  bool start_array(size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    Level& level = levels_.back();
    if (++level.keys > limits_.max_object_keys) {
      return refuse(Kind::kTooManyKeys, where(levels_.size() - 1),
                    "an object of more than " + std::to_string(limits_.max_object_keys) +
                        " keys (the limit on keys in one object)");
    }
    if (levels_.size() == 1 && !top_level_keys_.empty() &&
        std::find(top_level_keys_.begin(), top_level_keys_.end(), k) == top_level_keys_.end()) {
      const std::string shown = k.size() > 40 ? k.substr(0, 37) + "..." : k;
      return refuse(Kind::kUnknownKey, "unknown field '" + shown + "'");
    }
    pending_key_ = std::move(k);
    return true;
  }

  bool parse_error(size_t position, const std::string& token,
                   const nlohmann::detail::exception& e) {
    const std::string shown = token.size() > 40 ? token.substr(0, 37) + "..." : token;
    if (e.id == 406) {  // nlohmann's "number overflow"
      return refuse(Kind::kNumberOutOfRange, where(levels_.size()),
                    "the number " + shown + " is out of range (a double's, +-1.8e308)");
    }
    return refuse(Kind::kNotJson, "the body is not JSON (at byte " + std::to_string(position) +
                                      ": " + (token.empty() ? "the end" : "'" + shown + "'") + ")");
  }

  Json take() { return std::move(root_); }
  const BoundedJsonError& error() const { return *error_; }
  bool failed() const { return error_.has_value(); }

 private:
  struct Level {
    Json* container;
    int64_t keys = 0;
  };

  // The path to the value now being read inside the first `depth` levels: "the body" at the top,
  // then .key and [index] parts.
  std::string where(size_t depth) const {
    std::string out;
    for (size_t i = 0; i < depth; ++i) {
      const Json& c = *levels_[i].container;
      const bool innermost = i + 1 == levels_.size();
      if (c.is_array()) {
        // The innermost array has not yet appended the value being read; outer ones have.
        const size_t index = innermost ? c.size() : c.size() - 1;
        out += "[" + std::to_string(index) + "]";
      } else {
        const auto& object = c.get_ref<const Json::object_t&>();
        const std::string& k = innermost ? pending_key_ : object.back().first;
        out += (out.empty() ? "" : ".") + k;
      }
    }
    return out.empty() ? "the body" : out;
  }

  bool count() {
    if (++values_ > limits_.max_values) {
      return refuse(Kind::kTooManyValues, where(levels_.size()),
                    "more than " + std::to_string(limits_.max_values) +
                        " values in the body (the limit on values in one request)");
    }
    return true;
  }

  // Places `v` where the parser is; returns where it went.
  Json* place(Json&& v) {
    if (levels_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& c = *levels_.back().container;
    if (c.is_array()) {
      auto& array = c.get_ref<Json::array_t&>();
      array.push_back(std::move(v));
      return &array.back();
    }
    auto& object = static_cast<Json::object_t::Container&>(c.get_ref<Json::object_t&>());
    object.emplace_back(std::move(pending_key_), std::move(v));
    return &object.back().second;
  }

  template <class T>
  bool put(T&& v) {
    if (!count()) return false;
    place(Json(std::forward<T>(v)));
    return true;
  }

  bool open(Json&& container) {
    if (!count()) return false;
    if (static_cast<int64_t>(levels_.size()) >= limits_.max_depth) {
      return refuse(Kind::kTooDeep, where(levels_.size()),
                    "the JSON nests deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    levels_.push_back({place(std::move(container))});
    return true;
  }

  bool close() {
    levels_.pop_back();
    return true;
  }

  bool refuse(Kind kind, const std::string& message) {
    error_.emplace(kind, message);
    return false;
  }
  // The refusal of the value at `place`: "PLACE: WHAT".
  bool refuse(Kind kind, const std::string& place, const std::string& what) {
    error_.emplace(kind, place + ": " + what, place);
    return false;
  }

  const JsonLimits& limits_;
  std::span<const std::string_view> top_level_keys_;
  Json root_;
  std::vector<Level> levels_;  // the open arrays and objects, outermost first
  std::string pending_key_;    // the key of the value the innermost object reads next
  int64_t values_ = 0;
  std::optional<BoundedJsonError> error_;
};

}  // namespace

nlohmann::ordered_json read_bounded_json(std::string_view text, const JsonLimits& limits,
                                         std::span<const std::string_view> top_level_keys) {
  Builder builder(limits, top_level_keys);
  const bool ok = Json::sax_parse(text, &builder);
  if (!ok || builder.failed()) {
    if (builder.failed()) throw builder.error();
    throw BoundedJsonError(Kind::kNotJson, "the body is not JSON");
  }
  return builder.take();
}

}  // namespace tuner::serving
