// `tuner help`'s entry of one command, made from its Command entry and flag table.
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"

namespace tuner::cli {

namespace {

// The column (after the two spaces `tuner help` indents each command by) where descriptions start.
constexpr size_t kDescriptionColumn = 33;
// Lines longer than this wrap (a flag's help; descriptions are wrapped by hand).
constexpr size_t kWidth = 100;
// Flag lines sit this far in, under their command.
constexpr size_t kFlagIndent = 4;

// `text` split at '\n'.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

// `left` padded to the description column and `right` (wrapped at spaces to kWidth); `right`
// starts a line of its own when `left` leaves no room.
std::string column_line(const std::string& left, std::string_view right) {
  std::string line = "  " + left;
  if (right.empty()) return line + "\n";
  const std::string indent(2 + kDescriptionColumn, ' ');
  if (left.size() + 2 > kDescriptionColumn) {
    line += "\n" + indent;
  } else {
    line += std::string(kDescriptionColumn - left.size(), ' ');
  }
  const size_t room = kWidth - indent.size();
  while (right.size() > room) {
    size_t cut = right.rfind(' ', room);
    if (cut == std::string_view::npos || cut == 0) cut = right.find(' ');
    if (cut == std::string_view::npos) break;
    line += std::string(right.substr(0, cut)) + "\n" + indent;
    right.remove_prefix(cut + 1);
  }
  return line + std::string(right) + "\n";
}

}  // namespace

std::string command_help(const Command& command) {
  std::string out;
  const std::vector<std::string_view> synopsis = lines_of(command.synopsis);
  const std::vector<std::string_view> description = lines_of(command.description);
  // A short one-line synopsis takes the first line of the description beside it.
  size_t next = 0;
  if (synopsis.size() == 1 && !description.empty() &&
      synopsis[0].size() + 2 <= kDescriptionColumn) {
    out += column_line(std::string(synopsis[0]), description[next++]);
  } else {
    for (std::string_view line : synopsis) out += "  " + std::string(line) + "\n";
  }
  for (; next < description.size(); ++next) out += column_line("", description[next]);
  for (const Flag& flag : command.flags) {
    std::string left = std::string(kFlagIndent, ' ') + std::string(flag.name);
    if (flag.takes_value()) left += " " + std::string(flag.value);
    std::string help(flag.help);
    if (flag.required) help += help.empty() ? "(required)" : " (required)";
    out += column_line(left, help);
  }
  return out;
}

}  // namespace tuner::cli
