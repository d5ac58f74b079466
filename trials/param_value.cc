#include "trials/param_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "trials/error.h"

namespace tuner {

namespace {

// The shortest text that reads back as `v`, laid out as Python's repr lays it out: positional
// for exponents in [-4, 16), scientific otherwise ("0.0001", "1e-05", "2.5e+16", "3.0"), so a float
// never reads as an integer.
std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), v, std::chars_format::scientific);
  std::string text(buffer, result.ptr);  // e.g. "-1.25e-05"
  size_t e = text.find('e');
  int exponent = std::stoi(text.substr(e + 1));
  std::string sign = text[0] == '-' ? "-" : "";
  std::string digits;
  for (size_t i = sign.size(); i < e; ++i) {
    if (text[i] != '.') digits += text[i];
  }
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign;
    out.append(digits, 0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char exp[16];
    std::snprintf(exp, sizeof(exp), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  std::string out = sign;
  if (exponent < 0) {
    out.append("0.").append(static_cast<size_t>(-exponent - 1), '0').append(digits);
    return out;
  }
  auto int_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_digits) {
    out.append(digits).append(int_digits - digits.size(), '0').append(".0");
  } else {
    out.append(digits, 0, int_digits).append(".").append(digits, int_digits);
  }
  return out;
}

}  // namespace

std::string to_string(const ParamValue& value) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_double(d); }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
  };
  return std::visit(Visitor{}, value);
}

double as_double(const ParamValue& value) {
  if (const auto* d = std::get_if<double>(&value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  if (const auto* b = std::get_if<bool>(&value)) return *b ? 1.0 : 0.0;
  throw Error(ErrorCode::kInvalidArgument,
              "parameter value " + to_string(value) + " is a string, not a number");
}

}  // namespace tuner
