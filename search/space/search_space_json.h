// The JSON form of a SearchSpace: load it from text or a file, write it back.
//
//   {"params": {"lr": {"type": "float", "low": 1e-05, "high": 0.1, "log": true}, ...}}
//
// Types: float (low, high, log, step), int (low, high, log, step), categorical (choices),
// normal (mu, sigma, log, q) and fixed (value); any parameter may carry
// "condition": {"parent": NAME, "values": [...]}. The format, every field and its default, and the
// error messages are documented in docs/search_space.md.
//
// Loading validates everything; an error is Error(kInvalidArgument) whose message is
// "<source>: <JSON path>: <problem>", e.g. `space.json: params.lr.low: must be > 0 for a log
// scale`, or "<source>:<line>:<column>: JSON <problem>" for a syntax error.
// Load then save round-trips: parse_search_space(to_json(s)) == s, and
// to_json(parse_search_space(text)) == text for canonical text (the text to_json writes).
// All functions are safe to call from several threads.
#ifndef TUNER_SEARCH_SPACE_SEARCH_SPACE_JSON_H_
#define TUNER_SEARCH_SPACE_SEARCH_SPACE_JSON_H_

#include <filesystem>
#include <string>
#include <string_view>

#include "search/space/search_space.h"

namespace tuner {

// Parses the JSON text of a search space; `source` names it in errors (a file name).
SearchSpace parse_search_space(std::string_view json_text, std::string_view source = "<string>");

// Reads and parses `file`. Error(kNotFound) naming the file when it does not exist.
SearchSpace load_search_space(const std::filesystem::path& file);

// The canonical JSON text of `space`: 2-space indent, a trailing newline, parameters in the
// space's order, fields in the documented order, defaults left out, floats written with
// round-trip precision (always with a '.' or an exponent, so that they read back as floats).
std::string to_json(const SearchSpace& space);

}  // namespace tuner

#endif  // TUNER_SEARCH_SPACE_SEARCH_SPACE_JSON_H_
