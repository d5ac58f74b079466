#include "bench/suite/describe.h"

#include "bench/suite/problems.h"

namespace tuner::bench::suite {

nlohmann::json describe_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const Problem& p : problems()) {
    nlohmann::json params = nlohmann::json::array();
    for (const ParamSpec& s : p.params) {
      const char* type = s.type == ParamType::kFloat ? "float"
                         : s.type == ParamType::kInt ? "int"
                                                     : "categorical";
      params.push_back({{"name", s.name},
                        {"type", type},
                        {"low", s.low},
                        {"high", s.high},
                        {"log", s.log},
                        {"choices", s.choices},
                        {"parent", s.parent},
                        {"parent_choices", s.parent_choices}});
    }
    list.push_back({{"name", p.name},
                    {"group", p.group},
                    {"summary", p.summary},
                    {"optimum", p.optimum},
                    {"noise_sd", p.noise_sd},
                    {"minimizer", p.minimizer},
                    {"params", params}});
  }
  return {{"problems", list}};
}

}  // namespace tuner::bench::suite
