// JSON text the server writes by hand (answers and request-log lines carry thousands of numbers,
// which a JSON tree would allocate one by one): floats in their shortest exact form, rows of
// them, and strings.
//
// Thread safety: pure functions.
#ifndef TUNER_SERVING_JSON_TEXT_H_
#define TUNER_SERVING_JSON_TEXT_H_

#include <span>
#include <string>
#include <string_view>

namespace tuner::serving {

// The shortest text that reads back as `v` ("1.5", "-2", "0.1").
void append_float(std::string& out, float v);
// "[a, b, c]".
void append_row(std::string& out, std::span<const float> row);
// `s` as a JSON string: quotes, backslash and control characters escaped.
void append_json_string(std::string& out, std::string_view s);

}  // namespace tuner::serving

#endif  // TUNER_SERVING_JSON_TEXT_H_
