#include "search/samplers/gp/gp_sampler.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <list>
#include <mutex>
#include <numbers>
#include <optional>
#include <set>
#include <utility>
#include <variant>
#include <vector>

#include "search/pareto.h"
#include "search/samplers/gp/gaussian_process.h"
#include "search/samplers/gp/hypervolume_improvement.h"
#include "search/samplers/gp/lbfgs.h"
#include "search/samplers/gp/output_warping.h"
#include "search/samplers/random_sampler.h"
#include "search/samplers/tpe/parzen_estimator.h"
#include "trials/constraints.h"
#include "trials/error.h"

namespace tuner {

namespace {

// How one parameter sits in the unit cube: `width` coordinates from `offset`.
struct Coordinate {
  const ParamSpec* spec = nullptr;
  size_t offset = 0;
  size_t width = 1;          // choices for a categorical, else 1
  double low = 0, high = 1;  // the continuous range mapped to [0, 1] (log space when log)
  bool log = false;
  // An integer or a stepped float: its values are `values` points of the grid low, low + step,
  // ... (internal units); its coordinate only takes theirs.
  bool discrete = false;
  double step = 0;
  double first = 0;  // the lowest value
  int64_t values = 0;
};

// The parameters the GP models: numeric and categorical ones without conditions.
struct Encoding {
  std::vector<Coordinate> coordinates;
  size_t dims = 0;
};

std::optional<Coordinate> coordinate_of(const ParamSpec& spec) {
  if (spec.condition) return std::nullopt;
  Coordinate c{.spec = &spec};
  if (const auto* f = std::get_if<FloatDistribution>(&spec.distribution)) {
    const double half = f->step ? *f->step / 2 : 0.0;
    c.log = f->log;
    c.low = f->log ? std::log(f->low) : f->low - half;
    c.high = f->log ? std::log(f->high) : f->high + half;
    if (f->step) {
      c.discrete = true;
      c.step = *f->step;
      c.first = f->low;
      c.values = static_cast<int64_t>(std::llround((f->high - f->low) / *f->step)) + 1;
    }
  } else if (const auto* i = std::get_if<IntDistribution>(&spec.distribution)) {
    const double half = static_cast<double>(i->step) / 2;
    c.log = i->log;
    c.low =
        i->log ? std::log(static_cast<double>(i->low) - 0.5) : static_cast<double>(i->low) - half;
    c.high =
        i->log ? std::log(static_cast<double>(i->high) + 0.5) : static_cast<double>(i->high) + half;
    c.discrete = true;
    c.step = static_cast<double>(i->step);
    c.first = static_cast<double>(i->low);
    c.values = (i->high - i->low) / i->step + 1;
  } else if (const auto* k = std::get_if<CategoricalDistribution>(&spec.distribution)) {
    c.width = k->choices.size();
  } else {
    return std::nullopt;  // a normal prior: sampled on its own
  }
  return c;
}

Encoding encoding_of(const SearchSpace& space) {
  Encoding e;
  for (const ParamSpec& spec : space.params()) {
    if (std::optional<Coordinate> c = coordinate_of(spec)) {
      c->offset = e.dims;
      e.dims += c->width;
      e.coordinates.push_back(*c);
    }
  }
  return e;
}

// One lengthscale group per parameter (GpFitOptions::lengthscale_groups): a categorical's
// one-hot coordinates share one, so that the kernel sees its choices as equally far apart (the
// Hamming distance, as Optuna's GPSampler). Empty (a lengthscale per coordinate) when no
// parameter has several coordinates.
std::vector<int> lengthscale_groups(const Encoding& e) {
  if (e.dims == e.coordinates.size()) return {};
  std::vector<int> groups(e.dims);
  for (size_t i = 0; i < e.coordinates.size(); ++i) {
    const Coordinate& c = e.coordinates[i];
    for (size_t k = 0; k < c.width; ++k) groups[c.offset + k] = static_cast<int>(i);
  }
  return groups;
}

// The cube coordinate of a numeric parameter's internal value.
double coordinate_value(const Coordinate& c, double internal) {
  const double v = c.log ? std::log(internal) : internal;
  return c.high > c.low ? std::clamp((v - c.low) / (c.high - c.low), 0.0, 1.0) : 0.5;
}

// A trial's point in the cube; nullopt when it has a value outside the parameter's distribution,
// or lacks a modelled parameter. With `impute` (an observation of a warm start, History::prior),
// a missing parameter sits at the centre of its coordinates instead (0.5; 1/k on each of a
// categorical's k), so long as the trial has one of them at least.
std::optional<std::vector<double>> encode(const Encoding& e, const FrozenTrial& t,
                                          bool impute = false) {
  std::vector<double> x(e.dims, 0.0);
  bool any = false;
  for (const Coordinate& c : e.coordinates) {
    // A value drawn from another distribution (a study whose space changed) counts when this
    // one holds it.
    auto value = t.params.find(c.spec->name);
    auto dist = t.distributions.find(c.spec->name);
    if (value == t.params.end() || dist == t.distributions.end()) {
      if (!impute) return std::nullopt;
      for (size_t k = 0; k < c.width; ++k) x[c.offset + k] = c.width > 1 ? 1.0 / c.width : 0.5;
      continue;
    }
    if (!(dist->second == c.spec->distribution) && !contains(c.spec->distribution, value->second)) {
      return std::nullopt;
    }
    any = true;
    const double internal = to_internal(c.spec->distribution, value->second);
    if (std::holds_alternative<CategoricalDistribution>(c.spec->distribution)) {
      x[c.offset + static_cast<size_t>(internal)] = 1.0;
      continue;
    }
    x[c.offset] = coordinate_value(c, internal);
  }
  if (!any && !e.coordinates.empty()) return std::nullopt;
  return x;
}

ParamValue decode(const Coordinate& c, const std::vector<double>& x) {
  if (std::holds_alternative<CategoricalDistribution>(c.spec->distribution)) {
    const auto begin = x.begin() + static_cast<std::ptrdiff_t>(c.offset);
    const auto best = std::max_element(begin, begin + static_cast<std::ptrdiff_t>(c.width));
    return from_internal(c.spec->distribution, static_cast<double>(best - begin));
  }
  const double v = c.low + x[c.offset] * (c.high - c.low);
  return from_internal(c.spec->distribution, c.log ? std::exp(v) : v);
}

// z folded into [0, 1] by reflection at the bounds (a triangle wave of period 2): an
// unconstrained ascent through it stays in the cube, reaches its faces and keeps the full
// gradient everywhere (a logistic map's vanishes at the faces, and its ascent left coordinates
// pinned within 1e-7 of them).
double reflect(double z) {
  const double m = z - 2.0 * std::floor(z / 2.0);  // [0, 2)
  return m <= 1.0 ? m : 2.0 - m;
}
// d reflect / dz: +1 or -1.
double reflect_slope(double z) { return z - 2.0 * std::floor(z / 2.0) <= 1.0 ? 1.0 : -1.0; }

// The coordinate of a discrete parameter's value nearest to the coordinate u.
double snap_discrete(const Coordinate& c, double u) {
  const double v = c.low + u * (c.high - c.low);
  return coordinate_value(
      c, to_internal(c.spec->distribution,
                     from_internal(c.spec->distribution, c.log ? std::exp(v) : v)));
}

// A point moved onto the space: numeric coordinates clamped to the cube (a step past a face stops
// on it, where a linear objective's optimum is), integers and steps to the coordinate of their
// nearest value, categoricals one-hot; so that candidates are points the study can run, scored
// as what they are.
void snap(const Encoding& e, std::vector<double>& x) {
  for (const Coordinate& c : e.coordinates) {
    if (!std::holds_alternative<CategoricalDistribution>(c.spec->distribution)) {
      x[c.offset] = std::clamp(x[c.offset], 0.0, 1.0);
      if (c.discrete) x[c.offset] = snap_discrete(c, x[c.offset]);
      continue;
    }
    const auto begin = x.begin() + static_cast<std::ptrdiff_t>(c.offset);
    const auto end = begin + static_cast<std::ptrdiff_t>(c.width);
    const auto best = std::max_element(begin, end);
    const size_t chosen = static_cast<size_t>(best - begin);
    for (size_t i = 0; i < c.width; ++i) x[c.offset + i] = i == chosen ? 1.0 : 0.0;
  }
}

// log(E[max(f - best, 0)]) for f ~ N(mean, variance), stable far below the best.
double log_expected_improvement(double mean, double variance, double best) {
  const double sigma = std::sqrt(std::max(variance, 1e-18));
  const double z = (mean - best) / sigma;
  const double log_phi = -0.5 * z * z - 0.5 * std::log(2 * std::numbers::pi);
  if (z > -6.0) {
    const double cdf = 0.5 * std::erfc(-z / std::numbers::sqrt2);
    const double h = std::exp(log_phi) + z * cdf;
    return std::log(std::max(h, 1e-300)) + std::log(sigma);
  }
  // phi(z) + z Phi(z) = phi(z) / z^2 (1 - 3 / z^2 + 15 / z^4 - ...) for z -> -infinity.
  const double z2 = z * z;
  return log_phi - std::log(z2) + std::log1p(-3.0 / z2 + 15.0 / (z2 * z2)) + std::log(sigma);
}

// log(P(N(0, 1) <= z)), stable far in the lower tail.
double log_normal_cdf(double z) {
  if (z > -6.0) return std::log(std::max(0.5 * std::erfc(-z / std::numbers::sqrt2), 1e-300));
  // Phi(z) = phi(z) / -z (1 - 1 / z^2 + 3 / z^4 - ...) for z -> -infinity.
  const double z2 = z * z;
  return -0.5 * z2 - 0.5 * std::log(2 * std::numbers::pi) - std::log(-z) +
         std::log1p(-1.0 / z2 + 3.0 / (z2 * z2));
}

// A value and its derivatives with respect to a prediction's mean and variance.
struct Slope {
  double value = 0, d_mean = 0, d_variance = 0;
};

// log_expected_improvement and its derivatives: with z = (mean - best) / sigma and
// h(z) = phi(z) + z Phi(z), d log h / dz = Phi(z) / h(z).
Slope log_expected_improvement_slope(double mean, double variance, double best) {
  const double sigma = std::sqrt(std::max(variance, 1e-18));
  const double z = (mean - best) / sigma;
  const double value = log_expected_improvement(mean, variance, best);
  const double ratio = std::exp(log_normal_cdf(z) - (value - std::log(sigma)));
  const double d_sigma = (1.0 - ratio * z) / sigma;
  return {.value = value,
          .d_mean = ratio / sigma,
          .d_variance = variance > 1e-18 ? d_sigma / (2.0 * sigma) : 0.0};
}

// log Phi(-mean / sigma), the log probability that a constraint holds, and its derivatives.
Slope log_feasible_slope(double mean, double variance) {
  const double sigma = std::sqrt(std::max(variance, 1e-18));
  const double z = -mean / sigma;
  const double value = log_normal_cdf(z);
  // d log Phi / dz = phi(z) / Phi(z).
  const double q = std::exp(-0.5 * z * z - 0.5 * std::log(2 * std::numbers::pi) - value);
  const double d_sigma = q * mean / (sigma * sigma);
  return {.value = value,
          .d_mean = -q / sigma,
          .d_variance = variance > 1e-18 ? d_sigma / (2.0 * sigma) : 0.0};
}

// Fits a GP to `value` at `at`, warm-started from the parameters fitted from scratch to the
// anchor's points (search/samplers/gp/gp_sampler.h, "the kernel fit").
using WarmFit = std::function<GaussianProcess(
    const std::vector<std::vector<double>>& at, const std::vector<double>& value,
    const std::vector<std::vector<double>>& anchor_at, const std::vector<double>& anchor_value)>;

// The (point, value) pairs of the constraint `name` among `constraints[i]` observed at x[i].
void constraint_values(const std::string& name, const std::vector<std::vector<double>>& x,
                       const std::vector<std::vector<ConstraintValue>>& constraints,
                       std::vector<std::vector<double>>& at, std::vector<double>& value) {
  for (size_t i = 0; i < constraints.size(); ++i) {
    for (const ConstraintValue& c : constraints[i]) {
      if (c.name != name || !std::isfinite(c.value)) continue;
      at.push_back(x[i]);
      value.push_back(c.value);
    }
  }
}

// The constraints of a constrained study: one GP per constraint (by name), fitted to its values
// at the observed trials that have it, each giving the probability that the constraint holds.
class Feasibility {
 public:
  // `constraints[i]`: the values of the trial observed at x[i] (empty: none); the anchor's
  // likewise. Fits nothing when no trial has constraints.
  Feasibility(const std::vector<std::vector<double>>& x,
              const std::vector<std::vector<ConstraintValue>>& constraints,
              const std::vector<std::vector<double>>& anchor_x,
              const std::vector<std::vector<ConstraintValue>>& anchor_constraints,
              const WarmFit& fit) {
    std::vector<std::string> names;
    for (const auto& values : constraints) {
      for (const ConstraintValue& c : values) {
        if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
      }
    }
    for (const std::string& name : names) {
      std::vector<std::vector<double>> at, anchor_at;
      std::vector<double> value, anchor_value;
      constraint_values(name, x, constraints, at, value);
      constraint_values(name, anchor_x, anchor_constraints, anchor_at, anchor_value);
      if (!at.empty()) models_.push_back(fit(at, value, anchor_at, anchor_value));
    }
  }

  bool constrained() const { return !models_.empty(); }

  // The log of the probability that every constraint is <= 0 at `p`, taken as independent;
  // with `gradient`, its gradient with respect to p added there.
  double log_probability(const std::vector<double>& p,
                         std::vector<double>* gradient = nullptr) const {
    double sum = 0;
    std::vector<double> mean_gradient(p.size()), variance_gradient(p.size());
    for (const GaussianProcess& gp : models_) {
      if (gradient == nullptr) {
        const GaussianProcess::Prediction at = gp.predict(p);
        sum += log_normal_cdf(-at.mean / std::sqrt(std::max(at.variance, 1e-18)));
        continue;
      }
      const GaussianProcess::Prediction at =
          gp.predict_with_gradient(p, mean_gradient, variance_gradient);
      const Slope slope = log_feasible_slope(at.mean, at.variance);
      sum += slope.value;
      for (size_t j = 0; j < p.size(); ++j) {
        (*gradient)[j] += slope.d_mean * mean_gradient[j] + slope.d_variance * variance_gradient[j];
      }
    }
    return sum;
  }

  // log_probability at each of the points stored one after another in `flat`, added to `sums`.
  void add_log_probabilities(const std::vector<double>& flat, std::vector<double>& sums) const {
    std::vector<GaussianProcess::Prediction> at(sums.size());
    for (const GaussianProcess& gp : models_) {
      gp.predict(flat, sums.size(), at);
      for (size_t i = 0; i < sums.size(); ++i) {
        sums[i] += log_normal_cdf(-at[i].mean / std::sqrt(std::max(at[i].variance, 1e-18)));
      }
    }
  }

 private:
  std::vector<GaussianProcess> models_;
};

// Keeps at most `limit` of the observed trials (in their order): the best half by value (y is
// maximized), then the most recent of the others.
void keep_fit_window(int limit, std::vector<std::vector<double>>& x, std::vector<double>& y,
                     std::vector<std::vector<ConstraintValue>>& constraints,
                     std::vector<bool>& feasible) {
  const size_t n = x.size(), keep = static_cast<size_t>(std::max(limit, 2));
  if (n <= keep) return;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return y[a] > y[b]; });
  std::vector<bool> kept(n, false);
  for (size_t i = 0; i < keep / 2; ++i) kept[order[i]] = true;
  size_t count = keep / 2;
  for (size_t i = n; i-- > 0 && count < keep;) {
    if (!kept[i]) {
      kept[i] = true;
      ++count;
    }
  }
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!kept[i]) continue;
    if (out != i) {  // a vector moved onto itself would be left empty
      x[out] = std::move(x[i]);
      y[out] = y[i];
      constraints[out] = std::move(constraints[i]);
      feasible[out] = feasible[i];
    }
    ++out;
  }
  x.resize(out);
  y.resize(out);
  constraints.resize(out);
  feasible.resize(out);
}

// The observed (COMPLETE, finite, encodable) trials, in the history's order.
struct Observations {
  std::vector<std::vector<double>> x;
  std::vector<double> y;                                  // maximized
  std::vector<std::vector<ConstraintValue>> constraints;  // of each observed trial
  std::vector<bool> feasible;                             // of each observed trial

  Observations prefix(size_t n) const {
    n = std::min(n, x.size());
    const auto end = [n](const auto& v) { return v.begin() + static_cast<std::ptrdiff_t>(n); };
    return {{x.begin(), end(x)},
            {y.begin(), end(y)},
            {constraints.begin(), end(constraints)},
            {feasible.begin(), end(feasible)}};
  }
};

// The anchor of m observed trials: the largest multiple of the step at m, at most m, where the
// step is `every` up to 200 trials and 5% of m (in multiples of `every`) past it, so that the
// number of fits from scratch grows with the log of the study's length past 200. Below the first
// step, and with every = 0, m itself (a fit from scratch each time).
size_t anchor_of(size_t m, size_t every) {
  if (every == 0) return m;
  const size_t step = every * std::max<size_t>(1, m / (20 * every));
  const size_t anchor = m / step * step;
  return anchor > 0 ? anchor : m;
}

// A hash of the points and values, the same in every process: the seed of a fit from scratch.
uint64_t fingerprint(const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    h = (h ^ bits) * 0x100000001b3ULL;
    h ^= h >> 29;
  };
  for (const std::vector<double>& p : x) {
    for (double v : p) mix(v);
  }
  for (double v : y) mix(v);
  return h;
}

// How a proposal scores points of the cube: candidates in one batch (stored one after another,
// their values into `values`, zeros on entry), one point, and one point with the gradient.
struct Acquisition {
  std::function<void(const std::vector<double>& flat, std::vector<double>& values)> batch;
  std::function<double(const std::vector<double>&)> score;
  std::function<double(const std::vector<double>&, std::vector<double>&)> score_with_gradient;
};

// A key of a point of the cube: its coordinates to 1e-9 (discrete ones are snapped, so equal
// values give equal keys). Two proposals with the same key are the same trial.
std::vector<int64_t> point_key(const std::vector<double>& x) {
  std::vector<int64_t> key(x.size());
  for (size_t i = 0; i < x.size(); ++i) key[i] = std::llround(x[i] * 1e9);
  return key;
}

// The points a proposal must not repeat: those of the trials evaluated or running (every state
// but FAIL) other than `number` whose parameters are all modelled (a trial with others, drawn at
// random, differs from the proposal in them); none when the study's objective is noisy
// (History::noisy).
class Proposed {
 public:
  Proposed(const Encoding& e, const History& history, int number) {
    if (history.noisy) return;
    for (const FrozenTrial& t : history.trials) {
      if (t.state == TrialState::kFail || t.number == number ||
          t.params.size() != e.coordinates.size()) {
        continue;
      }
      if (std::optional<std::vector<double>> p = encode(e, t)) keys_.insert(point_key(*p));
    }
  }
  bool contains(const std::vector<double>& x) const {
    return !keys_.empty() && keys_.contains(point_key(x));
  }

 private:
  std::set<std::vector<int64_t>> keys_;
};

// The values a discrete coordinate search tries for `c` at coordinate u (snapped): every value
// when it has at most kExhaustiveValues, else the values 1, 2, 4, ... steps away on each side.
constexpr int64_t kExhaustiveValues = 16;
std::vector<double> discrete_moves(const Coordinate& c, double u) {
  std::vector<double> moves;
  if (c.values <= kExhaustiveValues) {
    for (int64_t i = 0; i < c.values; ++i) {
      moves.push_back(coordinate_value(c, c.first + static_cast<double>(i) * c.step));
    }
    return moves;
  }
  const double v = c.low + u * (c.high - c.low);
  const double internal = to_internal(c.spec->distribution,
                                      from_internal(c.spec->distribution, c.log ? std::exp(v) : v));
  const int64_t index = std::llround((internal - c.first) / c.step);
  for (int64_t k = 1; k < c.values; k *= 2) {
    for (int64_t i : {index - k, index + k}) {
      if (i >= 0 && i < c.values) {
        moves.push_back(coordinate_value(c, c.first + static_cast<double>(i) * c.step));
      }
    }
  }
  return moves;
}

// Moves each discrete parameter of `point` (an integer, a stepped float, a categorical) to the
// value of best score, the others fixed, in turn, until a pass moves none (at most 3 passes); each
// parameter's tries scored in one batch. Every point scored goes to `scored`.
void discrete_search(const Encoding& e, const Acquisition& acquisition,
                     std::pair<double, std::vector<double>>& point,
                     std::vector<std::pair<double, std::vector<double>>>& scored) {
  for (int pass = 0; pass < 3; ++pass) {
    bool moved = false;
    for (const Coordinate& c : e.coordinates) {
      const bool categorical =
          std::holds_alternative<CategoricalDistribution>(c.spec->distribution);
      if (!categorical && !c.discrete) continue;
      std::vector<std::vector<double>> tries;
      if (categorical) {
        for (size_t k = 0; k < c.width; ++k) {
          if (point.second[c.offset + k] == 1.0) continue;
          std::vector<double> p = point.second;
          for (size_t i = 0; i < c.width; ++i) p[c.offset + i] = i == k ? 1.0 : 0.0;
          tries.push_back(std::move(p));
        }
      } else {
        for (double u : discrete_moves(c, point.second[c.offset])) {
          if (u == point.second[c.offset]) continue;
          std::vector<double> p = point.second;
          p[c.offset] = u;
          tries.push_back(std::move(p));
        }
      }
      if (tries.empty()) continue;
      std::vector<double> flat, values(tries.size(), 0.0);
      flat.reserve(tries.size() * e.dims);
      for (const std::vector<double>& p : tries) flat.insert(flat.end(), p.begin(), p.end());
      acquisition.batch(flat, values);
      const size_t best =
          static_cast<size_t>(std::max_element(values.begin(), values.end()) - values.begin());
      const bool improves = values[best] > point.first;
      for (size_t i = 0; i < tries.size(); ++i) {
        if (i == best && improves) continue;
        scored.emplace_back(values[i], std::move(tries[i]));
      }
      if (improves) {
        scored.push_back(point);
        point = {values[best], std::move(tries[best])};
        moved = true;
      }
    }
    if (!moved) break;
  }
}

// The point of the cube that maximizes the acquisition (search/samplers/gp/gp_sampler.h) among
// those `proposed` does not hold: random candidates and candidates near `starts` (the best
// trials, best first, at most 5) scored in one batch, the best few refined by L-BFGS over the
// continuous coordinates and by a search over the discrete ones, then by a shrinking local
// search; the best point scored that is not a duplicate wins (a duplicate, the best, only when
// no point scored and no random point is new).
std::vector<double> maximize_acquisition(const Encoding& e, const GpSamplerOptions& options,
                                         const Acquisition& acquisition,
                                         const std::vector<const std::vector<double>*>& starts,
                                         const Proposed& proposed, Rng& rng) {
  // Candidates: random points of the cube, and points near the best trials, scored together.
  std::vector<std::vector<double>> candidates;
  candidates.reserve(static_cast<size_t>(options.n_candidates + options.n_local_candidates + 5));
  auto consider = [&](std::vector<double> p) {
    snap(e, p);
    candidates.push_back(std::move(p));
  };
  for (int i = 0; i < options.n_candidates; ++i) {
    std::vector<double> p(e.dims);
    for (double& v : p) v = rng.uniform();
    consider(std::move(p));
  }
  const size_t n_best = starts.size();
  for (size_t b = 0; b < n_best; ++b) {
    for (int i = 0; i < options.n_local_candidates / 5 + 1; ++i) {
      std::vector<double> p = *starts[b];
      for (double& v : p) v += 0.05 * rng.normal();
      consider(std::move(p));
    }
  }
  std::vector<double> values(candidates.size(), 0.0);
  {
    std::vector<double> flat;
    flat.reserve(candidates.size() * e.dims);
    for (const std::vector<double>& p : candidates) flat.insert(flat.end(), p.begin(), p.end());
    acquisition.batch(flat, values);
  }
  std::vector<std::pair<double, std::vector<double>>> scored;
  scored.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    scored.emplace_back(values[i], std::move(candidates[i]));
  }
  // Refine the best few new ones by quasi-Newton ascent over the continuous coordinates (the
  // others stay as they are), each through reflect() so that the cube's bounds hold; the
  // gradient analytic (search/samplers/gp/gaussian_process.h, predict_with_gradient). Then the
  // discrete coordinates, by discrete_search().
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<size_t> refine;
  for (size_t i = 0; i < scored.size() && refine.size() < 3; ++i) {
    if (!proposed.contains(scored[i].second)) refine.push_back(i);
  }
  if (refine.empty()) refine.push_back(0);
  std::vector<size_t> free;
  for (const Coordinate& c : e.coordinates) {
    if (!std::holds_alternative<CategoricalDistribution>(c.spec->distribution) && !c.discrete) {
      free.push_back(c.offset);
    }
  }
  std::vector<std::pair<double, std::vector<double>>> found;
  std::vector<double> point_gradient;
  for (size_t start : refine) {
    std::pair<double, std::vector<double>> at = scored[start];
    if (!free.empty()) {
      const std::vector<double>& from = scored[start].second;
      auto point = [&](const Eigen::VectorXd& z) {
        std::vector<double> p = from;
        for (size_t i = 0; i < free.size(); ++i) {
          p[free[i]] = reflect(z(static_cast<Eigen::Index>(i)));
        }
        return p;
      };
      auto negative_score = [&](const Eigen::VectorXd& z, Eigen::VectorXd& gradient) {
        const std::vector<double> p = point(z);
        const double s = acquisition.score_with_gradient(p, point_gradient);
        gradient.resize(z.size());
        for (size_t i = 0; i < free.size(); ++i) {
          gradient(static_cast<Eigen::Index>(i)) =
              -point_gradient[free[i]] * reflect_slope(z(static_cast<Eigen::Index>(i)));
        }
        return -s;
      };
      Eigen::VectorXd z(static_cast<Eigen::Index>(free.size()));
      for (size_t i = 0; i < free.size(); ++i) z(static_cast<Eigen::Index>(i)) = from[free[i]];
      std::vector<double> refined = point(minimize_lbfgs(negative_score, z, 50));
      const double value = acquisition.score(refined);
      if (value > at.first) at = {value, std::move(refined)};
    }
    discrete_search(e, acquisition, at, found);
    found.push_back(std::move(at));
  }
  // And a derivative-free local search from the same starts, with steps that shrink when no move
  // improves: it also moves several discrete coordinates at once, and escapes flat stretches of
  // the acquisition.
  for (size_t start : refine) {
    auto [value, point] = scored[start];
    double step = 0.05;
    for (int it = 0; it < 40 && step > 1e-4; ++it) {
      std::vector<double> next = point;
      for (double& v : next) v += step * rng.normal();
      snap(e, next);
      const double s = acquisition.score(next);
      if (s > value && !proposed.contains(next)) {
        value = s;
        point = std::move(next);
      } else {
        step *= 0.7;
      }
    }
    found.emplace_back(value, std::move(point));
  }
  found.insert(found.end(), std::make_move_iterator(scored.begin()),
               std::make_move_iterator(scored.end()));
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [value, point] : found) {
    if (!proposed.contains(point)) return point;
  }
  // Every point scored was tried already (a small discrete space, nearly exhausted): a random
  // new one, if a few draws find one.
  for (int i = 0; i < 256; ++i) {
    std::vector<double> p(e.dims);
    for (double& v : p) v = rng.uniform();
    snap(e, p);
    if (!proposed.contains(p)) return p;
  }
  return found.front().second;
}

// A startup trial: `draw()`, drawn again (at most 64 times) while its point repeats one that
// `proposed` holds.
Params draw_new(const Encoding& e, const Proposed& proposed, const std::function<Params()>& draw) {
  Params params = draw();
  for (int i = 0; i < 64; ++i) {
    FrozenTrial t;
    t.params = params;
    for (const Coordinate& c : e.coordinates) t.distributions[c.spec->name] = c.spec->distribution;
    const std::optional<std::vector<double>> p = encode(e, t);
    if (!p || !proposed.contains(*p)) break;
    params = draw();
  }
  return params;
}

// The parameters of the cube's point `chosen`, and what the GP does not model drawn at random.
Params decode_proposal(const SearchSpace& space, const Encoding& e,
                       const std::vector<double>& chosen, Rng& rng) {
  Params params;
  for (const Coordinate& c : e.coordinates) params[c.spec->name] = decode(c, chosen);
  // What the GP does not model: conditional parameters (when active) and normal priors.
  Params active = params;
  for (const ParamSpec& spec : space.params()) {
    if (params.contains(spec.name) || !space.is_active(spec, active)) continue;
    params[spec.name] = RandomSampler::draw(spec.distribution, rng);
    active[spec.name] = params[spec.name];
  }
  return params;
}

// Several objectives (search/samplers/gp/gp_sampler.h, "several objectives").

// The Monte Carlo samples of the expected hypervolume improvement (as Optuna's GPSampler).
constexpr size_t kEhviSamples = 128;

// The observed trials of a study of several objectives, each objective maximized (a minimized one
// negated), as one GP models it.
struct MultiObservations {
  std::vector<std::vector<double>> x;
  std::vector<std::vector<double>> y;  // y[k][i]: objective k at x[i], maximized
  std::vector<std::vector<ConstraintValue>> constraints;
  std::vector<bool> feasible;
};

// True while proposals are drawn at random: no dimension to model, or fewer than
// `n_startup_trials` (at least 1) `observed` trials.
bool starting_up(const Encoding& e, size_t observed, int n_startup_trials) {
  return e.dims == 0 || static_cast<int>(observed) < std::max(1, n_startup_trials);
}

// The COMPLETE trials with a finite value and an encodable point: the warm start's
// (History::prior, missing parameters imputed) first, then the study's, in the history's order.
Observations observe(const Encoding& e, const History& history) {
  Observations all;
  const double sign = history.direction() == StudyDirection::kMaximize ? 1.0 : -1.0;
  const size_t n_prior = history.prior.size();
  for (size_t i = 0; i < n_prior + history.trials.size(); ++i) {
    const bool prior = i < n_prior;
    const FrozenTrial& t = prior ? history.prior[i] : history.trials[i - n_prior];
    if (t.state != TrialState::kComplete || t.values.empty() || !std::isfinite(t.values[0])) {
      continue;
    }
    if (std::optional<std::vector<double>> p = encode(e, t, prior)) {
      all.x.push_back(std::move(*p));
      all.y.push_back(sign * t.values[0]);
      all.constraints.push_back(has_constraints(t) ? constraints_of(t)
                                                   : std::vector<ConstraintValue>{});
      all.feasible.push_back(constraint_violation(all.constraints.back()) == 0);
    }
  }
  return all;
}

// The COMPLETE trials with a finite value of each objective and an encodable point, the warm
// start's first, as observe() takes them.
MultiObservations observe_multi(const Encoding& e, const History& history) {
  const size_t m = history.directions.size();
  MultiObservations all{.y = std::vector<std::vector<double>>(m)};
  const size_t n_prior = history.prior.size();
  for (size_t i = 0; i < n_prior + history.trials.size(); ++i) {
    const bool prior = i < n_prior;
    const FrozenTrial& t = prior ? history.prior[i] : history.trials[i - n_prior];
    if (t.state != TrialState::kComplete || t.values.size() != m ||
        !std::all_of(t.values.begin(), t.values.end(), [](double v) { return std::isfinite(v); })) {
      continue;
    }
    if (std::optional<std::vector<double>> p = encode(e, t, prior)) {
      all.x.push_back(std::move(*p));
      for (size_t k = 0; k < m; ++k) {
        const double sign = history.directions[k] == StudyDirection::kMaximize ? 1.0 : -1.0;
        all.y[k].push_back(sign * t.values[k]);
      }
      all.constraints.push_back(has_constraints(t) ? constraints_of(t)
                                                   : std::vector<ConstraintValue>{});
      all.feasible.push_back(constraint_violation(all.constraints.back()) == 0);
    }
  }
  return all;
}

// The first n of the observed trials, then at most max_fit_trials of them: the best half by
// (constrained) non-domination rank, then the most recent (keep_fit_window on the ranks); each
// objective's values warped when warp_outputs.
MultiObservations fit_window(const MultiObservations& all, size_t n,
                             const GpSamplerOptions& options) {
  const size_t m = all.y.size();
  std::vector<double> losses, violations;
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < m; ++k) losses.push_back(-all.y[k][i]);
    violations.push_back(all.feasible[i] ? 0.0 : constraint_violation(all.constraints[i]));
  }
  std::vector<std::vector<double>> index(n);
  std::vector<double> rank(n);
  std::vector<std::vector<ConstraintValue>> constraints(
      all.constraints.begin(), all.constraints.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<bool> feasible(all.feasible.begin(),
                             all.feasible.begin() + static_cast<std::ptrdiff_t>(n));
  const std::vector<int> ranks = n > static_cast<size_t>(options.max_fit_trials)
                                     ? constrained_non_domination_ranks(losses, m, violations)
                                     : std::vector<int>(n, 0);
  for (size_t i = 0; i < n; ++i) index[i] = {static_cast<double>(i)}, rank[i] = -ranks[i];
  keep_fit_window(options.max_fit_trials, index, rank, constraints, feasible);
  MultiObservations o{.y = std::vector<std::vector<double>>(m)};
  for (const std::vector<double>& i : index) {
    const size_t at = static_cast<size_t>(i[0]);
    o.x.push_back(all.x[at]);
    for (size_t k = 0; k < m; ++k) o.y[k].push_back(all.y[k][at]);
    o.constraints.push_back(all.constraints[at]);
    o.feasible.push_back(all.feasible[at]);
  }
  if (options.warp_outputs) {
    for (std::vector<double>& values : o.y) {
      const OutputWarping warp = OutputWarping::fit(values);
      for (double& v : values) v = warp(v);
    }
  }
  return o;
}

// Adds the RUNNING trials other than `number` to `fitted`'s points, each objective at its worst
// value among the first n_observed (a constant liar); their constraints stay unknown.
void add_running_liars(const Encoding& e, const History& history, int number, size_t n_observed,
                       MultiObservations& fitted) {
  for (const FrozenTrial& t : history.trials) {
    if (t.state != TrialState::kRunning || t.number == number) continue;
    if (std::optional<std::vector<double>> p = encode(e, t)) {
      fitted.x.push_back(std::move(*p));
      for (std::vector<double>& values : fitted.y) {
        values.push_back(*std::min_element(
            values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n_observed)));
      }
    }
  }
}

// The front an EHVI proposal improves on.
struct Front {
  std::vector<double> losses;     // [point * m + objective]: warped, negated
  std::vector<size_t> trials;     // the observed trial of each point
  std::vector<double> reference;  // [objective]: just beyond the worst observed loss
  std::vector<double> best;       // [objective]: the front's least loss; +infinity when empty
};

// Each objective's reference: its worst loss among the first n_observed trials plus 10% of their
// range (at least 1e-9).
std::vector<double> reference_point(const MultiObservations& fitted, size_t n_observed) {
  const size_t m = fitted.y.size();
  std::vector<double> reference(m);
  for (size_t k = 0; k < m; ++k) {
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (size_t i = 0; i < n_observed; ++i) {
      low = std::min(low, -fitted.y[k][i]);
      high = std::max(high, -fitted.y[k][i]);
    }
    reference[k] = high + std::max(0.1 * (high - low), 1e-9);
  }
  return reference;
}

// Keeps the points of `front` that select_by_hypervolume() picks, in its order: past a few
// thousand cells of the box decomposition's grid (the front's size to the power m - 1), the
// points of largest hypervolume.
void thin_front(size_t m, Front& front) {
  const size_t front_limit =
      m == 2 ? front.trials.size()
             : static_cast<size_t>(std::pow(4096.0, 1.0 / static_cast<double>(m - 1))) - 1;
  std::vector<size_t> kept =
      select_by_hypervolume(front.losses, m, std::max<size_t>(5, front_limit), front.reference);
  std::vector<double> thinned;
  std::vector<size_t> thinned_trials;
  for (size_t i : kept) {
    thinned.insert(thinned.end(), front.losses.begin() + static_cast<std::ptrdiff_t>(i * m),
                   front.losses.begin() + static_cast<std::ptrdiff_t>((i + 1) * m));
    thinned_trials.push_back(front.trials[i]);
  }
  front.losses = std::move(thinned);
  front.trials = std::move(thinned_trials);
}

// The front: the losses of the first n_observed trials (the feasible ones when `constrained`)
// that no other dominates, thinned (thin_front()).
Front front_of(const MultiObservations& fitted, size_t n_observed, bool constrained) {
  const size_t m = fitted.y.size();
  std::vector<double> losses;
  std::vector<size_t> candidates_of_front;
  for (size_t i = 0; i < n_observed; ++i) {
    if (constrained && !fitted.feasible[i]) continue;
    for (size_t k = 0; k < m; ++k) losses.push_back(-fitted.y[k][i]);
    candidates_of_front.push_back(i);
  }
  Front front{.reference = reference_point(fitted, n_observed),
              .best = std::vector<double>(m, std::numeric_limits<double>::infinity())};
  for (size_t i : pareto_front(losses, m)) {
    front.losses.insert(front.losses.end(), losses.begin() + static_cast<std::ptrdiff_t>(i * m),
                        losses.begin() + static_cast<std::ptrdiff_t>((i + 1) * m));
    front.trials.push_back(candidates_of_front[i]);
  }
  thin_front(m, front);
  for (size_t i = 0; i < front.trials.size(); ++i) {
    for (size_t k = 0; k < m; ++k) front.best[k] = std::min(front.best[k], front.losses[i * m + k]);
  }
  return front;
}

// The log expected hypervolume improvement over a front by the objectives' GPs (as Optuna's
// GPSampler), plus the log probability of feasibility; with no feasible trial, the latter alone.
// Borrows everything it is given; one instance scores for one thread.
class EhviScore {
 public:
  // `z`: the Monte Carlo normal samples; `dims`: the cube's.
  EhviScore(const std::vector<GaussianProcess>& gps, const Feasibility& feasibility,
            const Front& front, const NonDominatedBoxes& boxes, const std::vector<double>& z,
            size_t dims)
      : gps_(gps),
        feasibility_(feasibility),
        front_(front),
        boxes_(boxes),
        z_(z),
        m_(gps.size()),
        dims_(dims),
        any_feasible_(!front.trials.empty()),
        mean_(m_),
        sd_(m_),
        d_mean_(m_),
        d_sd_(m_),
        mean_gradients_(m_, std::vector<double>(dims)),
        variance_gradients_(m_, std::vector<double>(dims)) {}

  // Scores through this object, which must outlive the result.
  Acquisition acquisition() {
    return {.batch = [this](const std::vector<double>& flat,
                            std::vector<double>& values) { batch(flat, values); },
            .score = [this](const std::vector<double>& p) { return score(p); },
            .score_with_gradient =
                [this](const std::vector<double>& p, std::vector<double>& gradient) {
                  return score_with_gradient(p, gradient);
                }};
  }

 private:
  // log EHVI from the predictions (maximized units) of the m GPs, at[k * stride]; where no sample
  // improves, a smooth floor far below any log EHVI: the log probability of beating the front's
  // best in every objective, less 1000. With `gradient` (m means then m variances), the
  // derivatives.
  double log_ehvi(const GaussianProcess::Prediction* at, size_t stride, double* gradient) {
    const size_t m = m_;
    for (size_t k = 0; k < m; ++k) {
      mean_[k] = -at[k * stride].mean;
      sd_[k] = std::sqrt(std::max(at[k * stride].variance, 1e-18));
    }
    const double volume = expected_improvement_volume(mean_.data(), sd_.data(), z_, boxes_,
                                                      gradient ? d_mean_.data() : nullptr,
                                                      gradient ? d_sd_.data() : nullptr);
    if (volume > 0) {
      if (gradient != nullptr) {
        for (size_t k = 0; k < m; ++k) {
          gradient[k] = -d_mean_[k] / volume;  // d/d(maximized mean) = -d/d(loss mean)
          gradient[m + k] = at[k * stride].variance > 1e-18 ? d_sd_[k] / volume / (2 * sd_[k]) : 0;
        }
      }
      return std::log(volume);
    }
    double s = -1000;
    for (size_t k = 0; k < m; ++k) {
      // P(loss < best) = Phi((best - mean) / sd) = log_feasible_slope of mean - best.
      const Slope slope = log_feasible_slope(mean_[k] - front_.best[k], at[k * stride].variance);
      s += slope.value;
      if (gradient != nullptr) gradient[k] = -slope.d_mean, gradient[m + k] = slope.d_variance;
    }
    return s;
  }

  double score(const std::vector<double>& p) {
    double s = 0;
    if (any_feasible_) {
      std::vector<GaussianProcess::Prediction> at(m_);
      for (size_t k = 0; k < m_; ++k) at[k] = gps_[k].predict(p);
      s = log_ehvi(at.data(), 1, nullptr);
    }
    if (feasibility_.constrained()) s += feasibility_.log_probability(p);
    return s;
  }

  double score_with_gradient(const std::vector<double>& p, std::vector<double>& gradient) {
    const size_t m = m_;
    gradient.assign(dims_, 0.0);
    double s = 0;
    if (any_feasible_) {
      std::vector<GaussianProcess::Prediction> at(m);
      for (size_t k = 0; k < m; ++k) {
        at[k] = gps_[k].predict_with_gradient(p, mean_gradients_[k], variance_gradients_[k]);
      }
      std::vector<double> slope(2 * m);
      s = log_ehvi(at.data(), 1, slope.data());
      for (size_t k = 0; k < m; ++k) {
        for (size_t j = 0; j < dims_; ++j) {
          gradient[j] +=
              slope[k] * mean_gradients_[k][j] + slope[m + k] * variance_gradients_[k][j];
        }
      }
    }
    if (feasibility_.constrained()) s += feasibility_.log_probability(p, &gradient);
    return s;
  }

  void batch(const std::vector<double>& flat, std::vector<double>& values) {
    const size_t count = values.size();
    if (any_feasible_) {
      std::vector<GaussianProcess::Prediction> at(m_ * count);
      for (size_t k = 0; k < m_; ++k) {
        gps_[k].predict(flat, count, std::span(at).subspan(k * count, count));
      }
      for (size_t i = 0; i < count; ++i) values[i] = log_ehvi(&at[i], count, nullptr);
    }
    if (feasibility_.constrained()) feasibility_.add_log_probabilities(flat, values);
  }

  const std::vector<GaussianProcess>& gps_;
  const Feasibility& feasibility_;
  const Front& front_;
  const NonDominatedBoxes& boxes_;
  const std::vector<double>& z_;
  const size_t m_, dims_;
  const bool any_feasible_;
  // Scratch of log_ehvi() and score_with_gradient().
  std::vector<double> mean_, sd_, d_mean_, d_sd_;
  std::vector<std::vector<double>> mean_gradients_, variance_gradients_;  // [objective][dim]
};

// Where the local candidates start: the front's trials of largest hypervolume (its first five as
// select_by_hypervolume() chose them); with no feasible trial, the five least infeasible of the
// first n_observed. Points into fitted.x.
std::vector<const std::vector<double>*> ehvi_starts(const Front& front,
                                                    const MultiObservations& fitted,
                                                    size_t n_observed) {
  const std::vector<std::vector<double>>& x = fitted.x;
  std::vector<const std::vector<double>*> starts;
  if (!front.trials.empty()) {
    for (size_t i = 0; i < std::min<size_t>(5, front.trials.size()); ++i) {
      starts.push_back(&x[front.trials[i]]);
    }
    return starts;
  }
  std::vector<size_t> order(n_observed);
  for (size_t i = 0; i < n_observed; ++i) order[i] = i;
  std::vector<double> violation(n_observed);
  for (size_t i = 0; i < n_observed; ++i) {
    violation[i] = constraint_violation(fitted.constraints[i]);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return violation[a] < violation[b]; });
  for (size_t i = 0; i < std::min<size_t>(5, n_observed); ++i) starts.push_back(&x[order[i]]);
  return starts;
}

// The prior mean of a single objective's GP over `e` (GpFitOptions::prior_mean): one standard
// deviation of its (warped, maximized) values below their mean, times the share of numeric
// parameters among the modelled ones. Far from every trial the model then expects a value worse
// than the average trial's. At the values' mean, the expected improvement far from the trials was
// largest at the far corners and faces of the cube (where the variance is), and proposals camped
// there for dozens of trials (Hartmann6, bench/suite). A categorical's one-hot coordinates have
// no such far corners, and over categoricals alone the values' mean did better (categorical6).
double objective_prior_mean(const Encoding& e) {
  size_t numeric = 0;
  for (const Coordinate& c : e.coordinates) {
    numeric += !std::holds_alternative<CategoricalDistribution>(c.spec->distribution);
  }
  return e.coordinates.empty()
             ? 0.0
             : -static_cast<double>(numeric) / static_cast<double>(e.coordinates.size());
}

// Budget as an input (GpSamplerOptions::budget_input).

// COMPLETE or PRUNED: a trial whose values the budget mode learns from.
bool ran(TrialState s) { return s == TrialState::kComplete || s == TrialState::kPruned; }

// True when the budget mode applies: one objective, no trial with constraints, and early
// stopping (a PRUNED trial with an intermediate value).
bool uses_budget_input(const GpSamplerOptions& options, const History& history) {
  if (!options.budget_input || history.directions.size() != 1) return false;
  bool stopped = false;
  for (const FrozenTrial& t : history.trials) {
    if (has_constraints(t)) return false;
    stopped = stopped || (t.state == TrialState::kPruned && !t.intermediate_values.empty());
  }
  return stopped;
}

// The observations of the budget mode: every finished trial's values at its budgets, each point
// the trial's parameters and the budget's coordinate (the last one), values maximized.
struct BudgetObservations {
  std::vector<std::vector<double>> x;  // [point]: dims + 1 coordinates
  std::vector<double> y;
  std::vector<size_t> trial;  // [point]: the observed trial it belongs to
  // [observed trial]: its parameters' coordinates (dims), in the history's order.
  std::vector<std::vector<double>> trials;
};

// A finished trial's (step, value) pairs: its finite intermediate values; a COMPLETE trial's
// final value at `top` (in place of a value at a step at or past it). With `thin`, of the steps
// below the last only those whose distance from `first` plus 1 is a power of two (1, 2, 4, ...
// steps), so that a long curve does not outweigh the trials.
std::vector<std::pair<int64_t, double>> budget_values(const FrozenTrial& t, int64_t first,
                                                      int64_t top, bool thin) {
  std::vector<std::pair<int64_t, double>> out;
  const bool complete =
      t.state == TrialState::kComplete && t.values.size() == 1 && std::isfinite(t.values.front());
  const int64_t last = t.intermediate_values.empty() ? top : t.intermediate_values.rbegin()->first;
  for (const auto& [step, value] : t.intermediate_values) {
    if (!std::isfinite(value) || (complete && step >= top)) continue;
    const uint64_t distance = static_cast<uint64_t>(step - first) + 1;
    if (thin && step != last && (distance & (distance - 1)) != 0) continue;
    out.emplace_back(step, value);
  }
  if (complete) out.emplace_back(std::max(top, last), t.values.front());
  return out;
}

// The budget mode's observations of `history` (the study's trials; a warm start's COMPLETE
// observations, History::prior, at the largest budget): the largest budget is the last step of
// the COMPLETE trials (of the finished ones while none is COMPLETE), and a step s sits at
// log(1 + s - first) / log(1 + top - first) of the budget's coordinate, `first` the least step
// observed (1 when every value is at the largest budget).
BudgetObservations observe_budgets(const Encoding& e, const History& history) {
  std::optional<int64_t> top_complete, top_finished, first;
  for (const FrozenTrial& t : history.trials) {
    if (!ran(t.state)) continue;
    for (const auto& [step, value] : t.intermediate_values) {
      first = std::min(first.value_or(step), step);
    }
    if (t.intermediate_values.empty()) continue;
    const int64_t last = t.intermediate_values.rbegin()->first;
    top_finished = std::max(top_finished.value_or(last), last);
    if (t.state == TrialState::kComplete)
      top_complete = std::max(top_complete.value_or(last), last);
  }
  const int64_t top = top_complete.value_or(top_finished.value_or(1));
  const int64_t low = std::min(first.value_or(top), top);
  const double span = std::log1p(static_cast<double>(top - low));
  auto coordinate = [&](int64_t step) {
    if (span <= 0 || step >= top) return 1.0;
    return std::clamp(std::log1p(static_cast<double>(step - low)) / span, 0.0, 1.0);
  };
  const double sign = history.direction() == StudyDirection::kMaximize ? 1.0 : -1.0;
  BudgetObservations all;
  const size_t n_prior = history.prior.size();
  for (size_t i = 0; i < n_prior + history.trials.size(); ++i) {
    const bool prior = i < n_prior;
    const FrozenTrial& t = prior ? history.prior[i] : history.trials[i - n_prior];
    if (prior && t.state != TrialState::kComplete) continue;
    if (!ran(t.state)) continue;
    const std::vector<std::pair<int64_t, double>> values =
        prior ? (t.values.size() == 1 && std::isfinite(t.values.front())
                     ? std::vector<std::pair<int64_t, double>>{{top, t.values.front()}}
                     : std::vector<std::pair<int64_t, double>>{})
              : budget_values(t, low, top, /*thin=*/true);
    if (values.empty()) continue;
    std::optional<std::vector<double>> p = encode(e, t, prior);
    if (!p) continue;
    for (const auto& [step, value] : values) {
      std::vector<double> point = *p;
      point.push_back(coordinate(step));
      all.x.push_back(std::move(point));
      all.y.push_back(sign * value);
      all.trial.push_back(all.trials.size());
    }
    all.trials.push_back(std::move(*p));
  }
  return all;
}

// The running trials of `history` other than trial `asking`, added to the observations at the
// worst value observed (a constant liar), so that workers asking at the same time do not all get
// the same point; with `budget`, that budget coordinate appended to each point.
// REQUIRES: y non-empty.
void add_running_trials(const Encoding& e, const History& history, int asking,
                        std::optional<double> budget, std::vector<std::vector<double>>& x,
                        std::vector<double>& y) {
  const double worst = *std::min_element(y.begin(), y.end());
  for (const FrozenTrial& t : history.trials) {
    if (t.state != TrialState::kRunning || t.number == asking) continue;
    if (std::optional<std::vector<double>> p = encode(e, t)) {
      if (budget) p->push_back(*budget);
      x.push_back(std::move(*p));
      y.push_back(worst);
    }
  }
}

// The first `n_trials` observed trials' points of `all`, then at most `limit` points: the best
// half by value, then the most recent (keep_fit_window).
void budget_window(const BudgetObservations& all, size_t n_trials, int limit,
                   std::vector<std::vector<double>>& x, std::vector<double>& y) {
  x.clear(), y.clear();
  for (size_t i = 0; i < all.x.size() && all.trial[i] < n_trials; ++i) {
    x.push_back(all.x[i]);
    y.push_back(all.y[i]);
  }
  std::vector<std::vector<ConstraintValue>> constraints(x.size());
  std::vector<bool> feasible(x.size(), true);
  keep_fit_window(limit, x, y, constraints, feasible);
}

}  // namespace

// The kernel parameters fitted from scratch at recent anchors, kept by their points and values
// (compared in full), so that a hit gives exactly what a fresh fit would. Thread-safe: the mutex
// guards the entries; fits run outside it (two threads missing at once compute the same thing).
class GpSampler::FitCache {
 public:
  // The kernel of (x, y) of this kind (0: the objective, 1: a constraint, 2 + k: objective k of
  // several) under this prior mean (GpFitOptions::prior_mean), fitted from scratch when missing,
  // with an Rng seeded by the points and values.
  GpKernelParams get(int kind, const std::vector<std::vector<double>>& x,
                     const std::vector<double>& y, double prior_mean = 0.0,
                     const std::vector<int>& groups = {}) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->key.is(kind, prior_mean, groups, x, y)) {
          entries_.splice(entries_.begin(), entries_, it);  // most recently used first
          return entries_.front().kernel;
        }
      }
    }
    Rng rng(fingerprint(x, y));
    GpKernelParams kernel =
        GaussianProcess::fit(x, y, rng, {.prior_mean = prior_mean, .lengthscale_groups = groups})
            .kernel();
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_front({{kind, prior_mean, groups, x, y}, kernel});
    if (entries_.size() > kCapacity) entries_.pop_back();
    return kernel;
  }

  // Whether the objective's values y at the anchor x go to its GP warped
  // (GpSamplerOptions::warp_outputs): warping_predicts_no_worse, its fits from one start (on the
  // function suite the same wins and losses as four starts, at a fraction of the time) seeded by
  // their points and values. Decided once per anchor.
  bool warps(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
             const GpFitOptions& options) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const Choice& c : choices_) {
        if (c.key.is(0, options.prior_mean, options.lengthscale_groups, x, y)) return c.warp;
      }
    }
    const bool warp = warping_predicts_no_worse(
        x, y, [&](const std::vector<std::vector<double>>& at, const std::vector<double>& values) {
          Rng rng(fingerprint(at, values));
          GpFitOptions one_start = options;
          one_start.restarts = 0;
          return GaussianProcess::fit(at, values, rng, one_start);
        });
    std::lock_guard<std::mutex> lock(mutex_);
    choices_.push_front({{0, options.prior_mean, options.lengthscale_groups, x, y}, warp});
    if (choices_.size() > kChoices) choices_.pop_back();
    return warp;
  }

  // The constraints' fit: each constraint's GP warm-started from its fit from scratch at the
  // anchor (kind 1; cold, with an Rng seeded by its points, when the anchor has no value of it).
  WarmFit constraint_fit() {
    return [this](const std::vector<std::vector<double>>& at, const std::vector<double>& value,
                  const std::vector<std::vector<double>>& anchor_at,
                  const std::vector<double>& anchor_value) {
      GpFitOptions fit_options;
      if (!anchor_at.empty()) fit_options.warm_start = get(1, anchor_at, anchor_value);
      Rng cold_rng(fingerprint(at, value));  // drawn from only without a warm start
      return GaussianProcess::fit(at, value, cold_rng, fit_options);
    };
  }

 private:
  // The objectives' anchors and a few constraints', with room for the anchors before.
  static constexpr size_t kCapacity = 16;
  // What a fit is of: its kind, prior mean, lengthscale groups, points and values.
  struct Key {
    int kind;
    double prior_mean;
    std::vector<int> groups;
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    bool is(int k, double m, const std::vector<int>& g, const std::vector<std::vector<double>>& at,
            const std::vector<double>& values) const {
      return kind == k && prior_mean == m && groups == g && y == values && x == at;
    }
  };
  struct Entry {
    Key key;
    GpKernelParams kernel;
  };
  static constexpr size_t kChoices = 2;  // this anchor's and the one before
  struct Choice {
    Key key;
    bool warp;
  };
  std::mutex mutex_;
  std::list<Entry> entries_;
  std::list<Choice> choices_;
};

GpSampler::GpSampler(GpSamplerOptions options)
    : options_(options), fits_(std::make_unique<FitCache>()) {
  if (options_.n_startup_trials < 0 || options_.n_candidates < 1 ||
      options_.n_local_candidates < 0 || options_.refit_every < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "GpSampler: n_startup_trials and refit_every must be >= 0 and n_candidates >= 1 "
                "(got " +
                    std::to_string(options_.n_startup_trials) + ", " +
                    std::to_string(options_.refit_every) + " and " +
                    std::to_string(options_.n_candidates) + ")");
  }
}

GpSampler::~GpSampler() = default;

ParamValue GpSampler::sample_independent(const std::string& name, const Distribution& distribution,
                                         const History& history, const TrialContext& trial,
                                         Rng& rng) {
  (void)name, (void)history, (void)trial;
  return RandomSampler::draw(distribution, rng);
}

SearchSpace GpSampler::relative_space(const History& history) {
  // The parameters every COMPLETE trial has, with the same distribution, in the first one's order;
  // those of the warm start's (History::prior) while the study has none.
  // In the budget mode (GpSamplerOptions::budget_input), a PRUNED trial with intermediate values
  // counts as COMPLETE.
  const bool budget = uses_budget_input(options_, history);
  auto counts = [budget](const FrozenTrial& t) {
    return t.state == TrialState::kComplete ||
           (budget && t.state == TrialState::kPruned && !t.intermediate_values.empty());
  };
  const bool own = std::any_of(history.trials.begin(), history.trials.end(), counts);
  const FrozenTrial* first = nullptr;
  std::vector<std::pair<std::string, Distribution>> shared;
  for (const FrozenTrial& t : own ? history.trials : history.prior) {
    if (!counts(t)) continue;
    if (first == nullptr) {
      first = &t;
      for (const auto& [name, d] : t.distributions) shared.emplace_back(name, d);
      continue;
    }
    std::erase_if(shared, [&](const auto& entry) {
      auto it = t.distributions.find(entry.first);
      return it == t.distributions.end() || !(it->second == entry.second);
    });
  }
  SearchSpace space;
  for (auto& [name, d] : shared) {
    if (is_single(d)) continue;
    space.add(ParamSpec{.name = name, .distribution = std::move(d)});
  }
  return space;
}

std::string GpSampler::origin(const SearchSpace& space, const History& history) const {
  const Encoding e = encoding_of(space);
  if (uses_budget_input(options_, history)) {
    return starting_up(e, observe_budgets(e, history).trials.size(), options_.n_startup_trials)
               ? "random"
               : name();
  }
  const size_t observed = history.directions.size() > 1 ? observe_multi(e, history).x.size()
                                                        : observe(e, history).x.size();
  return starting_up(e, observed, options_.n_startup_trials) ? "random" : name();
}

Params GpSampler::sample(const SearchSpace& space, const History& history,
                         const TrialContext& trial, Rng& rng) {
  if (history.directions.size() > 1) return sample_multi(space, history, trial, rng);
  if (uses_budget_input(options_, history)) return sample_budget(space, history, trial, rng);
  const Encoding e = encoding_of(space);
  const Observations all = observe(e, history);
  if (starting_up(e, all.x.size(), options_.n_startup_trials)) {
    return draw_new(e, Proposed(e, history, trial.number),
                    [&] { return Sampler::sample(space, history, trial, rng); });
  }
  // The anchor: the first anchor_of(m) of the m observed trials, whose kernel parameters are
  // fitted from scratch (several starts) and start this proposal's fit
  // (search/samplers/gp/gp_sampler.h).
  const size_t n_anchor = anchor_of(all.x.size(), static_cast<size_t>(options_.refit_every));
  Observations anchor = all.prefix(n_anchor);
  Observations fitted = std::move(all);
  keep_fit_window(options_.max_fit_trials, anchor.x, anchor.y, anchor.constraints, anchor.feasible);
  keep_fit_window(options_.max_fit_trials, fitted.x, fitted.y, fitted.constraints, fitted.feasible);
  const double prior_mean = objective_prior_mean(e);
  const std::vector<int> groups = lengthscale_groups(e);
  if (options_.warp_outputs &&
      fits_->warps(anchor.x, anchor.y, {.prior_mean = prior_mean, .lengthscale_groups = groups})) {
    for (Observations* o : {&anchor, &fitted}) {
      const OutputWarping warp = OutputWarping::fit(o->y);
      for (double& v : o->y) v = warp(v);
    }
  }
  std::vector<std::vector<double>>& x = fitted.x;
  std::vector<double>& y = fitted.y;
  const std::vector<std::vector<ConstraintValue>>& constraints = fitted.constraints;
  const std::vector<bool>& feasible = fitted.feasible;
  const size_t n_observed = x.size();
  add_running_trials(e, history, trial.number, std::nullopt, x, y);
  Rng unused(0);  // a warm fit draws nothing from its Rng
  const GaussianProcess gp =
      GaussianProcess::fit(x, y, unused,
                           {.prior_mean = prior_mean,
                            .lengthscale_groups = groups,
                            .warm_start = fits_->get(0, anchor.x, anchor.y, prior_mean, groups)});
  // The constraints' GPs, each warm-started from its fit from scratch at the anchor (none when
  // the anchor has no value of it yet).
  const WarmFit fit = fits_->constraint_fit();
  // Constrained: log EI over the best feasible posterior mean plus the log probability of
  // feasibility (Optuna's LogCEI); with no feasible trial yet, the probability alone.
  const Feasibility feasibility(x, constraints, anchor.x, anchor.constraints, fit);
  // The improvement is over the best posterior mean at a (feasible) trial, not over the best
  // value observed as Optuna's GPSampler does: over the observed value, the suite's noisy
  // Hartmann6 did better but Rastrigin did much worse, where the GP takes the ripples for noise
  // and the luckiest trough sets a bar its smooth mean never clears (docs/samplers.md, "GP").
  double best = -std::numeric_limits<double>::infinity();
  {
    std::vector<double> flat;
    flat.reserve(n_observed * e.dims);
    for (size_t i = 0; i < n_observed; ++i) flat.insert(flat.end(), x[i].begin(), x[i].end());
    std::vector<GaussianProcess::Prediction> at(n_observed);
    gp.predict(flat, n_observed, at);
    for (size_t i = 0; i < n_observed; ++i) {
      if (!feasibility.constrained() || feasible[i]) best = std::max(best, at[i].mean);
    }
  }
  const bool any_feasible = std::isfinite(best);
  auto score = [&](const std::vector<double>& p) {
    double s = 0;
    if (any_feasible) {
      const GaussianProcess::Prediction at = gp.predict(p);
      s = log_expected_improvement(at.mean, at.variance, best);
    }
    if (feasibility.constrained()) s += feasibility.log_probability(p);
    return s;
  };
  // The score and its gradient with respect to the point.
  std::vector<double> mean_gradient(e.dims), variance_gradient(e.dims);
  auto score_with_gradient = [&](const std::vector<double>& p, std::vector<double>& gradient) {
    gradient.assign(e.dims, 0.0);
    double s = 0;
    if (any_feasible) {
      const GaussianProcess::Prediction at =
          gp.predict_with_gradient(p, mean_gradient, variance_gradient);
      const Slope ei = log_expected_improvement_slope(at.mean, at.variance, best);
      s = ei.value;
      for (size_t j = 0; j < e.dims; ++j) {
        gradient[j] = ei.d_mean * mean_gradient[j] + ei.d_variance * variance_gradient[j];
      }
    }
    if (feasibility.constrained()) s += feasibility.log_probability(p, &gradient);
    return s;
  };

  // The best trials: feasible ones by value, then infeasible ones by their violation (running
  // trials, at the worst value, last).
  std::vector<size_t> order(y.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<double> violation(y.size(), 0.0);
  for (size_t i = 0; i < n_observed; ++i) {
    if (!feasible[i]) violation[i] = constraint_violation(constraints[i]);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (violation[a] != violation[b]) return violation[a] < violation[b];
    return y[a] > y[b];
  });
  std::vector<const std::vector<double>*> starts;
  for (size_t b = 0; b < std::min<size_t>(5, order.size()); ++b) starts.push_back(&x[order[b]]);
  const Acquisition acquisition{
      .batch =
          [&](const std::vector<double>& flat, std::vector<double>& values) {
            std::vector<GaussianProcess::Prediction> at(values.size());
            if (any_feasible) {
              gp.predict(flat, values.size(), at);
              for (size_t i = 0; i < at.size(); ++i) {
                values[i] = log_expected_improvement(at[i].mean, at[i].variance, best);
              }
            }
            if (feasibility.constrained()) feasibility.add_log_probabilities(flat, values);
          },
      .score = score,
      .score_with_gradient = score_with_gradient};
  const Proposed proposed(e, history, trial.number);
  return decode_proposal(
      space, e, maximize_acquisition(e, options_, acquisition, starts, proposed, rng), rng);
}

Params GpSampler::sample_budget(const SearchSpace& space, const History& history,
                                const TrialContext& trial, Rng& rng) {
  const Encoding e = encoding_of(space);
  const BudgetObservations all = observe_budgets(e, history);
  if (starting_up(e, all.trials.size(), options_.n_startup_trials)) {
    return draw_new(e, Proposed(e, history, trial.number),
                    [&] { return Sampler::sample(space, history, trial, rng); });
  }
  // The anchor's points: those of the first anchor_of(m) of the m observed trials (gp_sampler.h,
  // "the kernel fit").
  const size_t m = all.trials.size();
  std::vector<std::vector<double>> anchor_x, x;
  std::vector<double> anchor_y, y;
  budget_window(all, anchor_of(m, static_cast<size_t>(options_.refit_every)),
                options_.max_fit_trials, anchor_x, anchor_y);
  budget_window(all, m, options_.max_fit_trials, x, y);
  if (options_.warp_outputs) {
    for (std::vector<double>* values : {&anchor_y, &y}) {
      const OutputWarping warp = OutputWarping::fit(*values);
      for (double& v : *values) v = warp(v);
    }
  }
  add_running_trials(e, history, trial.number, /*budget=*/1.0, x, y);
  Rng unused(0);  // a warm fit draws nothing from its Rng
  const double prior_mean = objective_prior_mean(e);
  const GaussianProcess gp = GaussianProcess::fit(
      x, y, unused,
      {.prior_mean = prior_mean, .warm_start = fits_->get(3, anchor_x, anchor_y, prior_mean)});
  const size_t dims = e.dims;
  // Every score is at the largest budget (the budget's coordinate 1).
  auto flat_at_top = [dims](const std::vector<double>& flat, size_t count) {
    std::vector<double> out;
    out.reserve(count * (dims + 1));
    for (size_t i = 0; i < count; ++i) {
      const auto from = flat.begin() + static_cast<std::ptrdiff_t>(i * dims);
      out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(dims));
      out.push_back(1.0);
    }
    return out;
  };
  // The improvement is over the best posterior mean at the largest budget of an observed trial.
  std::vector<double> top_mean(m);
  {
    std::vector<double> flat;
    flat.reserve(m * dims);
    for (const std::vector<double>& p : all.trials) flat.insert(flat.end(), p.begin(), p.end());
    std::vector<GaussianProcess::Prediction> at(m);
    gp.predict(flat_at_top(flat, m), m, at);
    for (size_t i = 0; i < m; ++i) top_mean[i] = at[i].mean;
  }
  const double best = *std::max_element(top_mean.begin(), top_mean.end());
  // The first rung: the log probability that the value at the least budget (coordinate 0) is at
  // least the median of the values observed there, so that a point an early-stopping scheduler
  // would stop after its first step is discounted. Left out below 3 such values.
  std::vector<double> first_values;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i][dims] == 0.0) first_values.push_back(y[i]);
  }
  const bool first_rung = first_values.size() >= 3;
  double threshold = 0;
  if (first_rung) {
    std::sort(first_values.begin(), first_values.end());
    threshold = first_values[first_values.size() / 2];
  }
  std::vector<double> scratch(dims + 1), scratch_first(dims + 1);
  std::vector<double> first_mean_gradient(dims + 1), first_variance_gradient(dims + 1);
  // With `gradient`, the term's gradient added there.
  auto log_pass_first_rung = [&](const std::vector<double>& p, std::vector<double>* gradient) {
    std::copy(p.begin(), p.end(), scratch_first.begin());
    scratch_first[dims] = 0.0;
    if (gradient == nullptr) {
      const GaussianProcess::Prediction at = gp.predict(scratch_first);
      return log_feasible_slope(threshold - at.mean, at.variance).value;
    }
    const GaussianProcess::Prediction at =
        gp.predict_with_gradient(scratch_first, first_mean_gradient, first_variance_gradient);
    const Slope slope = log_feasible_slope(threshold - at.mean, at.variance);
    for (size_t j = 0; j < dims; ++j) {
      (*gradient)[j] +=
          -slope.d_mean * first_mean_gradient[j] + slope.d_variance * first_variance_gradient[j];
    }
    return slope.value;
  };
  auto score = [&](const std::vector<double>& p) {
    std::copy(p.begin(), p.end(), scratch.begin());
    scratch[dims] = 1.0;
    const GaussianProcess::Prediction at = gp.predict(scratch);
    return log_expected_improvement(at.mean, at.variance, best) +
           (first_rung ? log_pass_first_rung(p, nullptr) : 0.0);
  };
  std::vector<double> mean_gradient(dims + 1), variance_gradient(dims + 1);
  auto score_with_gradient = [&](const std::vector<double>& p, std::vector<double>& gradient) {
    std::copy(p.begin(), p.end(), scratch.begin());
    scratch[dims] = 1.0;
    const GaussianProcess::Prediction at =
        gp.predict_with_gradient(scratch, mean_gradient, variance_gradient);
    const Slope ei = log_expected_improvement_slope(at.mean, at.variance, best);
    gradient.assign(dims, 0.0);
    for (size_t j = 0; j < dims; ++j) {
      gradient[j] = ei.d_mean * mean_gradient[j] + ei.d_variance * variance_gradient[j];
    }
    return ei.value + (first_rung ? log_pass_first_rung(p, &gradient) : 0.0);
  };
  const Acquisition acquisition{
      .batch =
          [&](const std::vector<double>& flat, std::vector<double>& values) {
            std::vector<GaussianProcess::Prediction> at(values.size());
            gp.predict(flat_at_top(flat, values.size()), values.size(), at);
            for (size_t i = 0; i < at.size(); ++i) {
              values[i] = log_expected_improvement(at[i].mean, at[i].variance, best);
            }
            if (first_rung) {
              std::vector<double> first = flat_at_top(flat, values.size());
              for (size_t i = 0; i < values.size(); ++i) first[i * (dims + 1) + dims] = 0.0;
              gp.predict(first, values.size(), at);
              for (size_t i = 0; i < at.size(); ++i) {
                values[i] += log_feasible_slope(threshold - at[i].mean, at[i].variance).value;
              }
            }
          },
      .score = score,
      .score_with_gradient = score_with_gradient};
  // The local candidates start from the trials of best posterior mean at the largest budget.
  std::vector<size_t> order(m);
  for (size_t i = 0; i < m; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return top_mean[a] > top_mean[b]; });
  std::vector<const std::vector<double>*> starts;
  for (size_t b = 0; b < std::min<size_t>(5, m); ++b) starts.push_back(&all.trials[order[b]]);
  const Proposed proposed(e, history, trial.number);
  return decode_proposal(
      space, e, maximize_acquisition(e, options_, acquisition, starts, proposed, rng), rng);
}

Params GpSampler::sample_multi(const SearchSpace& space, const History& history,
                               const TrialContext& trial, Rng& rng) {
  const Encoding e = encoding_of(space);
  const size_t m = history.directions.size();
  const MultiObservations all = observe_multi(e, history);
  if (starting_up(e, all.x.size(), options_.n_startup_trials)) {
    return draw_new(e, Proposed(e, history, trial.number),
                    [&] { return Sampler::sample(space, history, trial, rng); });
  }
  // The anchor, as for one objective (gp_sampler.h, "the kernel fit"), one per objective.
  const MultiObservations anchor =
      fit_window(all, anchor_of(all.x.size(), static_cast<size_t>(options_.refit_every)), options_);
  MultiObservations fitted = fit_window(all, all.x.size(), options_);
  const size_t n_observed = fitted.x.size();
  add_running_liars(e, history, trial.number, n_observed, fitted);
  Rng unused(0);  // a warm fit draws nothing from its Rng
  std::vector<GaussianProcess> gps;
  for (size_t k = 0; k < m; ++k) {
    gps.push_back(GaussianProcess::fit(
        fitted.x, fitted.y[k], unused,
        {.warm_start = fits_->get(2 + static_cast<int>(k), anchor.x, anchor.y[k])}));
  }
  const WarmFit fit = fits_->constraint_fit();
  const Feasibility feasibility(fitted.x, fitted.constraints, anchor.x, anchor.constraints, fit);
  const Front front = front_of(fitted, n_observed, feasibility.constrained());
  const NonDominatedBoxes boxes = !front.trials.empty()
                                      ? non_dominated_boxes(front.losses, m, front.reference)
                                      : NonDominatedBoxes{};
  const std::vector<double> z = normal_samples(kEhviSamples, m, rng);
  EhviScore ehvi(gps, feasibility, front, boxes, z, e.dims);
  const Proposed proposed(e, history, trial.number);
  const std::vector<double> chosen = maximize_acquisition(
      e, options_, ehvi.acquisition(), ehvi_starts(front, fitted, n_observed), proposed, rng);
  return decode_proposal(space, e, chosen, rng);
}

}  // namespace tuner
