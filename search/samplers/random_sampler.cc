#include "search/samplers/random_sampler.h"

#include <algorithm>
#include <cmath>

#include "trials/overloaded.h"

namespace tuner {

namespace {

// Log-uniform on [low, high] with step 1: drawn on [low - 0.5, high + 0.5] in log space so the
// end points get their share, then rounded (Optuna does the same).
int64_t draw_log_int(const IntDistribution& d, Rng& rng) {
  double lo = std::log(static_cast<double>(d.low) - 0.5);
  double hi = std::log(static_cast<double>(d.high) + 0.5);
  double x = std::round(std::exp(rng.uniform(lo, hi)));
  return std::clamp(static_cast<int64_t>(x), d.low, d.high);
}

}  // namespace

ParamValue RandomSampler::draw(const Distribution& distribution, Rng& rng) {
  return std::visit(
      Overloaded{
          [&](const FloatDistribution& d) -> ParamValue {
            if (d.step) {
              auto n = static_cast<int64_t>(std::llround((d.high - d.low) / *d.step));
              return from_internal(distribution,
                                   d.low + static_cast<double>(rng.integer(0, n)) * *d.step);
            }
            if (d.log)
              return std::clamp(std::exp(rng.uniform(std::log(d.low), std::log(d.high))), d.low,
                                d.high);
            return rng.uniform(d.low, d.high);
          },
          [&](const IntDistribution& d) -> ParamValue {
            if (d.log) return draw_log_int(d, rng);
            return d.low + rng.integer(0, (d.high - d.low) / d.step) * d.step;
          },
          [&](const CategoricalDistribution& d) -> ParamValue {
            return d.choices[static_cast<size_t>(
                rng.integer(0, static_cast<int64_t>(d.choices.size()) - 1))];
          },
          [&](const NormalDistribution& d) -> ParamValue {
            double x = d.mu + d.sigma * rng.normal();
            if (d.log) x = std::exp(x);
            return from_internal(distribution, x);
          },
      },
      distribution);
}

ParamValue RandomSampler::sample_independent(const std::string&, const Distribution& distribution,
                                             const History&, const TrialContext&, Rng& rng) {
  return draw(distribution, rng);
}

}  // namespace tuner
