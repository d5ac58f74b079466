#include "trials/param_value.h"

#include <charconv>

#include "trials/error.h"

namespace tuner {

namespace {
std::string format_double(double v) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), v);
  return std::string(buffer, result.ptr);
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
