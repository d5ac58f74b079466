#include "util/strings.h"

namespace tuner {

std::string_view trim(std::string_view text, std::string_view chars) {
  const size_t begin = text.find_first_not_of(chars);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(chars) - begin + 1);
}

}  // namespace tuner
