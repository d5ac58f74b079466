// Internal helpers for reading JSON documents with errors that name the JSON path.
//
// Shared by the search-space JSON form and the NNI and W&B importers; not part of the public API.
// A path is written the way jq writes it: `params.lr.low`, `choices[2]`, and a key that is not a
// plain word in brackets: `params["optimizer.lr"]`. Every check throws
// Error(kInvalidArgument, "<path>: <problem>"). Stateless; safe from any thread.
#ifndef TUNER_SEARCH_JSON_PATH_H_
#define TUNER_SEARCH_JSON_PATH_H_

#include <cstdint>
#include <filesystem>
#include <initializer_list>
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

// The closest of `candidates` to `word` (a typo: at most 1 edit for words of 4 letters or less,
// at most 2 otherwise, counting a swap of neighbours as one edit), if any.
std::optional<std::string> closest_match(std::string_view word,
                                         std::initializer_list<std::string_view> candidates);
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

// ` (did you mean "x"?)` when `word` is a typo of a candidate, else empty.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// Checks that `value` is an object.
const Json& expect_object(const Json& value, std::string_view path, std::string_view what = "");

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
// A number: integers are converted; throws "must be a number, not a string".
double read_number(const Json& value, std::string_view path);
// An integer in the int64 range; floats are refused ("must be an integer, not 1.5").
int64_t read_integer(const Json& value, std::string_view path);
bool read_bool(const Json& value, std::string_view path);
const std::string& read_string(const Json& value, std::string_view path);
// A string, integer, float or boolean, keeping its JSON type (1 and 1.0 differ).
ParamValue read_scalar(const Json& value, std::string_view path);
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

#endif  // TUNER_SEARCH_JSON_PATH_H_
