// A request body's JSON read into a tree in time linear in its length, under limits fixed before
// the first byte is read: nesting depth, keys of one object, values in the document. A body past
// a limit is refused as soon as the parser reaches the value that passes it, so a hostile body
// costs no more than the limits allow, whatever its size.
//
// Objects keep their keys in the order the client wrote them (a data frame record's columns are
// in that order), and a key is appended without searching the object for it: a key written
// twice appears twice, and the caller decides what that means.
//
// A number past a double's range (1e400, an integer of 400 digits) is refused as out of range,
// naming where it is, rather than as text that is not JSON.
//
// Thread safety: a pure function.
#ifndef TUNER_SERVING_BOUNDED_JSON_H_
#define TUNER_SERVING_BOUNDED_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tuner::serving {

// The limits on one request body's JSON (docs/serving.md, "Limits").
struct JsonLimits {
  // Arrays and objects nested in one another. Default 64.
  int max_depth = 64;
  // Keys of one object (a data frame record's columns). Default 262,144 (a 3x224x224 image).
  int64_t max_object_keys = int64_t{1} << 18;
  // Values in the document, arrays and objects included; each costs 16 bytes of tree or more.
  // Default 4,194,304 (64 MiB of tree).
  int64_t max_values = int64_t{1} << 22;
};

// Why a body was refused.
class BoundedJsonError : public std::runtime_error {
 public:
  enum class Kind {
    kNotJson,           // malformed text
    kNumberOutOfRange,  // a number past a double's range
    kTooDeep,           // past max_depth
    kTooManyKeys,       // past max_object_keys
    kTooManyValues,     // past max_values
    kUnknownKey,        // a top-level key not among those allowed
  };
  BoundedJsonError(Kind kind, const std::string& message, std::string place = {})
      : std::runtime_error(message), kind_(kind), place_(std::move(place)) {}
  Kind kind() const { return kind_; }
  // Where in the document it was refused ("dataframe_records[0]", "the body"); empty for text
  // that is not JSON and for an unknown key.
  const std::string& place() const { return place_; }

 private:
  Kind kind_;
  std::string place_;
};

// The document `text` holds. Throws BoundedJsonError whose message names the place
// ("dataframe_records[0]", "inputs[2][5]") and the limit. With `top_level_keys`, a key of the
// top-level object that is not among them is refused as soon as it is read ("unknown field
// 'k'"), before anything after it is parsed.
nlohmann::ordered_json read_bounded_json(std::string_view text, const JsonLimits& limits,
                                         std::span<const std::string_view> top_level_keys = {});

}  // namespace tuner::serving

#endif  // TUNER_SERVING_BOUNDED_JSON_H_
