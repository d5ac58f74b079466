// A guard for JSON text from outside (messages, stored attributes): how deep it nests, found
// without parsing, so a hostile document is refused before a recursive parser sees it.
#ifndef TUNER_TRIALS_JSON_DEPTH_H_
#define TUNER_TRIALS_JSON_DEPTH_H_

#include <string_view>

namespace tuner {

// True when `text` opens more than `max_depth` nested arrays or objects (brackets inside strings
// do not count). Malformed text is left to the parser.
bool json_nests_deeper_than(std::string_view text, int max_depth);

}  // namespace tuner

#endif  // TUNER_TRIALS_JSON_DEPTH_H_
