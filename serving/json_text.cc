#include "serving/json_text.h"

#include <charconv>
#include <cstdio>

namespace tuner::serving {

void append_float(std::string& out, float v) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v);
  (void)ec;  // 32 characters hold every float
  out.append(buffer, end);
}

void append_row(std::string& out, std::span<const float> row) {
  out += '[';
  for (size_t c = 0; c < row.size(); ++c) {
    if (c > 0) out += ", ";
    append_float(out, row[c]);
  }
  out += ']';
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", c);
      out += escape;
    } else {
      out += ch;
    }
  }
  out += '"';
}

}  // namespace tuner::serving
