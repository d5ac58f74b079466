// The JSON form of a SearchSpace as a parsed nlohmann::ordered_json value, for modules that embed
// a space in a larger document (a sweep file). Included by .cc files only; the text API is in
// search/space/search_space_json.h, the format in docs/search_space.md. Thread-safe.
#ifndef TUNER_SEARCH_SPACE_SEARCH_SPACE_JSON_VALUE_H_
#define TUNER_SEARCH_SPACE_SEARCH_SPACE_JSON_VALUE_H_

#include <nlohmann/json.hpp>
#include <string>

#include "search/space/search_space.h"

namespace tuner {

// Reads a space from `value` ({"params": {...}}). `path` is the JSON path of `value` in its
// document and prefixes every error: with path "space", an error reads
// "space.params.lr.low: must be > 0 for a log scale"; with an empty path, "params.lr.low: ...".
// Throws Error(kInvalidArgument).
SearchSpace search_space_from_json(const nlohmann::ordered_json& value, const std::string& path);

// The canonical JSON value of `space` (see to_json in search/space/search_space_json.h).
nlohmann::ordered_json search_space_to_json_value(const SearchSpace& space);

}  // namespace tuner

#endif  // TUNER_SEARCH_SPACE_SEARCH_SPACE_JSON_VALUE_H_
