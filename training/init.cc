#include "training/init.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace tuner::training {

std::string_view init_name(Init init) {
  switch (init) {
    case Init::kZeros:
      return "zeros";
    case Init::kOnes:
      return "ones";
    case Init::kHeNormal:
      return "he_normal";
    case Init::kHeUniform:
      return "he_uniform";
    case Init::kXavierNormal:
      return "xavier_normal";
    case Init::kXavierUniform:
      return "xavier_uniform";
  }
  return "?";
}

void initialize(Init init, int64_t fan_in, int64_t fan_out, Rng& rng, std::span<float> values) {
  const bool xavier = init == Init::kXavierNormal || init == Init::kXavierUniform;
  if (init != Init::kZeros && init != Init::kOnes && (fan_in <= 0 || (xavier && fan_out <= 0))) {
    throw std::invalid_argument("initialize(" + std::string(init_name(init)) +
                                "): fan_in and fan_out must be positive");
  }
  const double fan = xavier ? static_cast<double>(fan_in + fan_out) / 2.0 : fan_in;
  switch (init) {
    case Init::kZeros:
      std::fill(values.begin(), values.end(), 0.0f);
      return;
    case Init::kOnes:
      std::fill(values.begin(), values.end(), 1.0f);
      return;
    case Init::kHeNormal:
    case Init::kXavierNormal: {
      const float std_dev = static_cast<float>(std::sqrt((xavier ? 1.0 : 2.0) / fan));
      for (float& v : values) v = std_dev * rng.normal();
      return;
    }
    case Init::kHeUniform:
    case Init::kXavierUniform: {
      const float bound = static_cast<float>(std::sqrt((xavier ? 3.0 : 6.0) / fan));
      for (float& v : values) v = rng.uniform(-bound, bound);
      return;
    }
  }
}

}  // namespace tuner::training
