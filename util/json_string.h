// A string as a JSON string literal.
#ifndef TUNER_UTIL_JSON_STRING_H_
#define TUNER_UTIL_JSON_STRING_H_

#include <string>
#include <string_view>

namespace tuner {

// `text` quoted and escaped as JSON ("a\"b" for a"b). REQUIRES: `text` is UTF-8.
std::string json_string(std::string_view text);

}  // namespace tuner

#endif  // TUNER_UTIL_JSON_STRING_H_
