#include "trials/trial_origin.h"

#include <nlohmann/json.hpp>

#include "trials/json_depth.h"

namespace tuner {

std::string sampler_of(const FrozenTrial& trial) {
  auto it = trial.system_attrs.find(kSamplerAttr);
  if (it == trial.system_attrs.end() || json_nests_deeper_than(it->second, kMaxJsonDepth)) {
    return "";
  }
  const nlohmann::json name = nlohmann::json::parse(it->second, nullptr, false);
  return name.is_string() ? name.get<std::string>() : "";
}

}  // namespace tuner
