// A guard for JSON text from outside (messages, sweep files, stored attributes, registry files):
// how deep it nests, found without parsing, so a hostile document is refused before a recursive
// parser, copy or dump sees it (nlohmann's copies and dumps recurse once per level).
#ifndef TUNER_TRIALS_JSON_DEPTH_H_
#define TUNER_TRIALS_JSON_DEPTH_H_

#include <string_view>

#include "trials/error.h"

namespace tuner {

// The deepest nesting accepted in documents (sweep files, attributes, registry files). Real ones
// nest a few levels; Python's json reader, which Optuna uses, gives up near 1,000.
inline constexpr int kMaxJsonDepth = 256;

// True when `text` opens more than `max_depth` nested arrays or objects (brackets inside strings
// do not count). Malformed text is left to the parser.
bool json_nests_deeper_than(std::string_view text, int max_depth);

// Throws Error(code, "<where>: JSON nested deeper than 256 levels") when `text` nests deeper than
// kMaxJsonDepth.
void check_json_depth(std::string_view text, std::string_view where,
                      ErrorCode code = ErrorCode::kInvalidArgument);

}  // namespace tuner

#endif  // TUNER_TRIALS_JSON_DEPTH_H_
