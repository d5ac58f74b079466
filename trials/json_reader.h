// The project's one typed reader of JSON documents: sweep files, search spaces and their NNI and
// W&B imports, and jobs (command and engine) all read their values through it, so that every
// error reads alike: Error(kInvalidArgument, "<path>: expected <what>, got <value>"), e.g.
// `training.lr: expected a number > 0, got -1`, `x.low: expected an integer, got 0.5`,
// `optimizer: expected "adam", "adamw" or "sgd", got "adm" (did you mean "adam"?)`. A caller adds
// its source in front (with_source: `sweep.json: ...`). A path is written the way jq writes it:
// `params.lr.low`, `choices[2]`, and a key that is not a plain word in brackets:
// `params["optimizer.lr"]`.
//
// Internal to the project (not installed: it needs nlohmann/json, which the library keeps
// private). Stateless; safe from any thread.
#ifndef TUNER_TRIALS_JSON_READER_H_
#define TUNER_TRIALS_JSON_READER_H_

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trials/error.h"
#include "trials/json.h"
#include "trials/param_value.h"

namespace tuner {

// `path` extended by an object key or an array index. An empty path gives the bare key.
std::string child_path(std::string_view path, std::string_view key);
std::string index_path(std::string_view path, size_t index);

// Throws Error(kInvalidArgument, "<path>: <message>"), or just the message when path is empty.
[[noreturn]] void fail_at(std::string_view path, std::string_view message);

// The JSON type of `value` for messages: "a string", "an integer", "a float", "a boolean",
// "null", "an array", "an object".
std::string json_type_name(const Json& value);

// `value` as an error shows what it got: a string, number or boolean as its JSON text ("-1",
// "\"abc\"", "true"), anything else by its type ("an object", "an array", "null").
std::string shown_value(const Json& value);

// The closest of `candidates` to `word` (a typo: at most 1 edit for words of 4 letters or less,
// at most 2 otherwise, counting a swap of neighbours as one edit), if any.
std::optional<std::string> closest_match(std::string_view word,
                                         std::initializer_list<std::string_view> candidates);
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

// ` (did you mean "x"?)` when `word` is a typo of a candidate, else empty.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// Checks that `value` is an object ("expected an object (<what>), got 3").
const Json& expect_object(const Json& value, std::string_view path, std::string_view what = "");
// Checks that `value` is an array ("expected an array, got \"a\"").
const Json& expect_array(const Json& value, std::string_view path);

// Throws for the first key of `object` not in `allowed`:
//   `<path>: unknown field "hgih" <context> (did you mean "high"?)`, listing the allowed fields
// when none is close. `context` is e.g. `for type float`, may be empty.
void check_fields(const Json& object, std::string_view path,
                  std::initializer_list<std::string_view> allowed, std::string_view context = "");
void check_fields(const Json& object, std::string_view path,
                  const std::vector<std::string_view>& allowed, std::string_view context = "");

// The field, or nullptr when absent.
const Json* find_field(const Json& object, std::string_view key);
// The field; throws `<path>: missing required field "key"<hint>` when absent.
const Json& require_field(const Json& object, std::string_view path, std::string_view key,
                          std::string_view hint = "");

// Typed reads; `path` is the path of `value` itself.
// A number: integers are converted; throws "expected a number, got \"abc\"".
double read_number(const Json& value, std::string_view path);
// An integer in the int64 range; floats are refused ("expected an integer, got 1.5").
int64_t read_integer(const Json& value, std::string_view path);
bool read_bool(const Json& value, std::string_view path);
const std::string& read_string(const Json& value, std::string_view path);
// A string, integer, float or boolean, keeping its JSON type (1 and 1.0 differ).
ParamValue read_scalar(const Json& value, std::string_view path);

// The interval a number must lie in; an infinite end is no bound.
struct NumberRange {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool low_open = false;   // (low, ...: low itself is refused
  bool high_open = false;  // ..., high): high itself is refused

  // "a number > 0", "a number >= 0", "a number in [0, 1)", "a number".
  std::string describe() const;
  bool contains(double x) const;
};

// A finite number in `range`: "expected a number in [0, 1), got 1.5".
double read_number(const Json& value, std::string_view path, const NumberRange& range);
// An integer in [low, high]: "expected an integer >= 1, got 0" (high at INT_MAX or above is no
// bound), "expected an integer in [1, 64], got 65".
int64_t read_integer(const Json& value, std::string_view path, int64_t low,
                     int64_t high = std::numeric_limits<int64_t>::max());
// A string that is not empty ("must not be empty").
const std::string& read_nonempty_string(const Json& value, std::string_view path);
// One of `names`, returned as its index: `expected "adam", "adamw" or "sgd", got "adm" (did you
// mean "adam"?)`.
size_t read_choice(const Json& value, std::string_view path, const std::vector<std::string>& names);
// `names` as a message lists them: "\"a\", \"b\" or \"c\"".
std::string choice_list(const std::vector<std::string>& names);
// True when `value` is a JSON integer (signed or unsigned), not a float.
bool is_json_integer(const Json& value);

// The JSON form of a parameter value: strings, integers, floats and booleans as themselves.
Json scalar_to_json(const ParamValue& value);

// Parses JSON text. Throws Error(kInvalidArgument) naming `source` and, for syntax errors, the
// line and column (`<source>:3:7: syntax error ...`); a key repeated in one object and a number
// too large for a double are errors naming their path.
Json parse_json_text(std::string_view text, std::string_view source);

// The largest sweep, space or import file read_text_file reads.
inline constexpr size_t kMaxJsonFileBytes = size_t{4} << 20;

// The contents of `file`; Error(kNotFound) naming it when it does not exist,
// Error(kInvalidArgument) when it cannot be read or is larger than kMaxJsonFileBytes.
std::string read_text_file(const std::filesystem::path& file);

// `error` with its message prefixed by "<source>: ", keeping its code.
Error with_source(const Error& error, std::string_view source);

}  // namespace tuner

#endif  // TUNER_TRIALS_JSON_READER_H_
