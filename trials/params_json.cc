#include "trials/params_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "trials/error.h"
#include "trials/json_depth.h"

namespace tuner {

namespace {

// Deeper nesting than this is refused before parsing (parameters are flat; this only bounds the
// work an error message's dump of a hostile value may do).
constexpr int kMaxDepth = 64;

std::string shorten(std::string text) {
  constexpr size_t kMax = 80;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

}  // namespace

std::string params_to_json(const Params& params) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto& entry : params) {
    const std::string& name = entry.first;
    const ParamValue& value = entry.second;
    if (const auto* d = std::get_if<double>(&value); d && !std::isfinite(*d)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "parameter '" + name + "' is " + to_string(value) +
                      ", which JSON cannot hold: parameters must be finite");
    }
    std::visit([&](const auto& v) { object[name] = v; }, value);
  }
  return object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Params params_from_json(std::string_view json, const std::string& where) {
  auto fail = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, where + why);
  };
  if (json_nests_deeper_than(json, kMaxDepth))
    throw fail(": nested deeper than " + std::to_string(kMaxDepth));
  nlohmann::json object = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) throw fail(": not valid JSON");
  if (!object.is_object()) {
    throw fail(": expected a JSON object of parameters, got " + std::string(object.type_name()));
  }
  Params params;
  for (const auto& item : object.items()) {
    const std::string& name = item.key();
    const nlohmann::json& v = item.value();
    auto bad = [&](const std::string& why) {
      return fail("." + shorten(name) + ": " + why + " (got " +
                  shorten(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) + ")");
    };
    if (v.is_boolean()) {
      params[name] = v.get<bool>();
    } else if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) throw bad("integer out of the int64 range");
      params[name] = static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
      params[name] = v.get<int64_t>();
    } else if (v.is_number_float()) {
      double d = v.get<double>();
      if (!std::isfinite(d)) throw bad("float out of the double range");
      params[name] = d;
    } else if (v.is_string()) {
      params[name] = v.get<std::string>();
    } else {
      throw bad("expected a boolean, integer, float or string");
    }
  }
  return params;
}

}  // namespace tuner
