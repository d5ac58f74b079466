#include "launch/shell_quote.h"

#include <algorithm>
#include <cctype>

namespace tuner {

std::string shell_quote(std::string_view word) {
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string shell_quote_if_needed(std::string_view word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  });
  return plain ? std::string(word) : shell_quote(word);
}

}  // namespace tuner
