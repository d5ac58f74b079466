#include "trials/frozen_trial.h"

#include <cmath>

#include "trials/error.h"

namespace tuner {

double FrozenTrial::value() const {
  if (values.size() != 1) {
    throw Error(ErrorCode::kFailedPrecondition, "trial " + std::to_string(number) + " has " +
                                                    std::to_string(values.size()) +
                                                    " values; value() needs exactly one");
  }
  return values.front();
}

void FrozenTrial::validate(size_t n_objectives) const {
  auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kInternal, "trial " + std::to_string(number) + ": " + what);
  };
  if (params.size() != distributions.size()) fail("params and distributions differ in number");
  for (const auto& [name, value] : params) {
    auto it = distributions.find(name);
    if (it == distributions.end()) fail("param '" + name + "' has no distribution");
    if (!contains(it->second, value)) {
      fail("param '" + name + "' = " + to_string(value) + " is not in " + to_string(it->second));
    }
  }
  for (double v : values) {
    if (std::isnan(v)) fail("a value is NaN");
  }
  if (state == TrialState::kComplete) {
    if (values.size() != n_objectives) {
      fail("COMPLETE with " + std::to_string(values.size()) + " values for " +
           std::to_string(n_objectives) + " objectives");
    }
    for (double v : values) {
      if (!std::isfinite(v)) fail("COMPLETE with a non-finite value");
    }
  }
  if (!is_finished(state)) {
    if (!values.empty()) fail(std::string(to_string(state)) + " but has values");
    if (datetime_complete) fail(std::string(to_string(state)) + " but has a completion time");
  }
}

}  // namespace tuner
