// Quoting for POSIX sh: the batch scripts a launcher writes, and commands shown in messages.
//
// Thread safety: pure functions.
#ifndef TUNER_LAUNCH_SHELL_QUOTE_H_
#define TUNER_LAUNCH_SHELL_QUOTE_H_

#include <string>
#include <string_view>

namespace tuner {

// `word` in single quotes, each ' written as '\'': sh reads it back as exactly `word`.
std::string shell_quote(std::string_view word);
// `word` as it is when it has only characters sh takes literally ([A-Za-z0-9_@%+=:,./-]),
// else shell_quote(word).
std::string shell_quote_if_needed(std::string_view word);

}  // namespace tuner

#endif  // TUNER_LAUNCH_SHELL_QUOTE_H_
