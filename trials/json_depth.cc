#include "trials/json_depth.h"

#include <string>

namespace tuner {

bool json_nests_deeper_than(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace tuner

namespace tuner {

void check_json_depth(std::string_view text, std::string_view where, ErrorCode code) {
  if (json_nests_deeper_than(text, kMaxJsonDepth)) {
    throw Error(code, std::string(where) + ": JSON nested deeper than " +
                          std::to_string(kMaxJsonDepth) + " levels");
  }
}

}  // namespace tuner
