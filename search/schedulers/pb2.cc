#include "search/schedulers/pb2.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "search/samplers/gp/gaussian_process.h"
#include "trials/error.h"

namespace tuner {

namespace {

// Random candidates of the acquisition's maximization, the best of them refined, and the rounds
// and samples of each refinement (a local random search whose radius halves every round).
constexpr int kCandidates = 512;
constexpr int kRefined = 3;
constexpr int kRefineRounds = 12;
constexpr int kRefineSamples = 16;
constexpr double kRefineRadius = 0.1;

// One bandit param: its place in [0, 1] is its value's between lo and hi (logarithms where log).
// Integers and stepped floats are widened by half a step each side, so that every value has an
// equal share of [0, 1].
struct Axis {
  std::string name;
  Distribution distribution;
  double lo = 0;
  double hi = 1;
  bool log = false;
};

Axis axis_of(const std::string& name, const Distribution& distribution) {
  Axis a{.name = name, .distribution = distribution};
  double low = 0, high = 0, half = 0;
  if (const auto* f = std::get_if<FloatDistribution>(&distribution)) {
    low = f->low;
    high = f->high;
    half = f->step ? *f->step / 2 : 0;
    a.log = f->log;
  } else {
    const auto& i = std::get<IntDistribution>(distribution);
    low = static_cast<double>(i.low);
    high = static_cast<double>(i.high);
    half = static_cast<double>(i.step) / 2;
    a.log = i.log;
  }
  // A log range widened below its low end would reach 0: it is widened on its own scale.
  a.lo = a.log ? std::log(std::max(low - half, low / 2)) : low - half;
  a.hi = a.log ? std::log(high + half) : high + half;
  return a;
}

// `value`'s place in [0, 1]; nullopt for a value of another type or not finite.
std::optional<double> encode(const Axis& a, const ParamValue& value) {
  double x = 0;
  if (const auto* d = std::get_if<double>(&value)) {
    x = *d;
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    x = static_cast<double>(*i);
  } else {
    return std::nullopt;
  }
  if (!std::isfinite(x) || (a.log && x <= 0)) return std::nullopt;
  if (a.log) x = std::log(x);
  return std::clamp((x - a.lo) / (a.hi - a.lo), 0.0, 1.0);
}

// The value at place `u`, rounded to the distribution's step and within its bounds.
ParamValue decode(const Axis& a, double u) {
  double x = a.lo + std::clamp(u, 0.0, 1.0) * (a.hi - a.lo);
  if (a.log) x = std::exp(x);
  if (const auto* f = std::get_if<FloatDistribution>(&a.distribution)) {
    if (f->step) x = f->low + std::round((x - f->low) / *f->step) * *f->step;
    return std::clamp(x, f->low, f->high);
  }
  const auto& d = std::get<IntDistribution>(a.distribution);
  const double k = std::round((x - static_cast<double>(d.low)) / static_cast<double>(d.step));
  const double most = std::floor(static_cast<double>(d.high - d.low) / static_cast<double>(d.step));
  return d.low + static_cast<int64_t>(std::clamp(k, 0.0, most)) * d.step;
}

// The bandit's axes among `params`, by `distributions`.
std::vector<Axis> axes_of(const Params& params,
                          const std::map<std::string, Distribution, std::less<>>& distributions) {
  std::vector<Axis> axes;
  for (const auto& [name, value] : params) {
    auto d = distributions.find(name);
    if (d != distributions.end() && pb2_models(d->second)) axes.push_back(axis_of(name, d->second));
  }
  return axes;
}

// The places of `p`'s values on `axes`; nullopt when one lacks a bandit param or has one of
// another type.
std::optional<std::vector<double>> places(const std::vector<Axis>& axes, const Params& p) {
  std::vector<double> u;
  for (const Axis& a : axes) {
    auto it = p.find(a.name);
    if (it == p.end()) return std::nullopt;
    std::optional<double> place = encode(a, it->second);
    if (!place) return std::nullopt;
    u.push_back(*place);
  }
  return u;
}

// A GP input at the new segment's time (1) and places `u`.
std::vector<double> point(std::span<const double> u) {
  std::vector<double> p = {1.0};
  p.insert(p.end(), u.begin(), u.end());
  return p;
}

}  // namespace

bool pb2_models(const Distribution& distribution) {
  return (std::holds_alternative<FloatDistribution>(distribution) ||
          std::holds_alternative<IntDistribution>(distribution)) &&
         !is_single(distribution);
}

struct Pb2Model::Impl {
  std::vector<Axis> axes;
  int64_t start_step = 0;
  std::vector<std::vector<double>> x;            // the observations' inputs (time, places)
  std::vector<double> y;                         // their gains, clipped
  std::vector<std::vector<double>> used_places;  // their places
  GaussianProcess gp;
};

Pb2Model::Pb2Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Pb2Model::Pb2Model(Pb2Model&&) noexcept = default;
Pb2Model& Pb2Model::operator=(Pb2Model&&) noexcept = default;
Pb2Model::~Pb2Model() = default;

std::optional<Pb2Model> Pb2Model::fit(
    std::span<const Pb2Observation> observations, int64_t start_step, const Params& params,
    const std::map<std::string, Distribution, std::less<>>& distributions, Rng& rng) {
  std::vector<Axis> axes = axes_of(params, distributions);
  if (axes.empty()) return std::nullopt;

  // The latest observations that have every bandit param, by start step (ties in given order).
  std::vector<size_t> order(observations.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return observations[a].start_step < observations[b].start_step;
  });
  std::vector<const Pb2Observation*> used;
  std::vector<std::vector<double>> used_places;
  for (auto it = order.rbegin(); it != order.rend() && used.size() < kPb2MaxObservations; ++it) {
    const Pb2Observation& o = observations[*it];
    if (!std::isfinite(o.gain_per_step)) continue;
    if (std::optional<std::vector<double>> u = places(axes, *o.params)) {
      used.push_back(&o);
      used_places.push_back(std::move(*u));
    }
  }
  if (used.size() < kPb2MinObservations) return std::nullopt;

  // Inputs: (time, places), the time the start step over the new segment's.
  auto time_of = [&](int64_t step) {
    return start_step > 0
               ? std::clamp(static_cast<double>(step) / static_cast<double>(start_step), 0.0, 1.0)
               : 1.0;
  };
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (size_t i = 0; i < used.size(); ++i) {
    std::vector<double> row = {time_of(used[i]->start_step)};
    row.insert(row.end(), used_places[i].begin(), used_places[i].end());
    x.push_back(std::move(row));
    y.push_back(used[i]->gain_per_step);
  }
  // A diverging segment's gain would flatten every other: gains are clipped to two standard
  // deviations of their mean (as Ray's PB2 clips its standardized ones).
  const double mean = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
  double var = 0;
  for (double v : y) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / static_cast<double>(y.size()));
  for (double& v : y) v = std::clamp(v, mean - 2 * sd, mean + 2 * sd);

  try {
    GaussianProcess gp = GaussianProcess::fit(x, y, rng);
    return Pb2Model(std::make_unique<Impl>(Impl{.axes = std::move(axes),
                                                .start_step = start_step,
                                                .x = std::move(x),
                                                .y = std::move(y),
                                                .used_places = std::move(used_places),
                                                .gp = std::move(gp)}));
  } catch (const Error&) {
    return std::nullopt;  // no kernel fits: the caller explores as PBT does
  }
}

bool Pb2Model::fits(int64_t start_step, const Params& params,
                    const std::map<std::string, Distribution, std::less<>>& distributions) const {
  if (start_step != impl_->start_step) return false;
  const std::vector<Axis> axes = axes_of(params, distributions);
  return std::equal(axes.begin(), axes.end(), impl_->axes.begin(), impl_->axes.end(),
                    [](const Axis& a, const Axis& b) {
                      return a.name == b.name && a.distribution == b.distribution;
                    });
}

std::optional<Params> Pb2Model::select(std::span<const Params* const> pending, const Params& params,
                                       double kappa, Rng& rng) const {
  const std::vector<Axis>& axes = impl_->axes;
  const size_t dims = axes.size();
  // The pending points, observed at the mean the GP predicts there: the mean stays, the variance
  // near them shrinks.
  std::optional<GaussianProcess> refit;
  try {
    std::vector<std::vector<double>> x_pending = impl_->x;
    std::vector<double> y_pending = impl_->y;
    for (const Params* p : pending) {
      if (std::optional<std::vector<double>> u = places(axes, *p)) {
        std::vector<double> at = point(*u);
        y_pending.push_back(impl_->gp.predict(at).mean);
        x_pending.push_back(std::move(at));
      }
    }
    if (x_pending.size() > impl_->x.size()) {
      GpFitOptions fixed;
      fixed.warm_start = impl_->gp.kernel();
      fixed.max_iterations = 0;
      refit.emplace(GaussianProcess::fit(x_pending, y_pending, rng, fixed));
    }
  } catch (const Error&) {
    return std::nullopt;
  }
  const GaussianProcess& gp = refit ? *refit : impl_->gp;

  // UCB at `count` places stored one after another.
  const size_t width = dims + 1;
  auto ucb = [&](const std::vector<std::vector<double>>& us) {
    std::vector<double> flat;
    flat.reserve(us.size() * width);
    for (const std::vector<double>& u : us) {
      const std::vector<double> p = point(u);
      flat.insert(flat.end(), p.begin(), p.end());
    }
    std::vector<GaussianProcess::Prediction> out(us.size());
    gp.predict(flat, us.size(), out);
    std::vector<double> scores(us.size());
    for (size_t i = 0; i < us.size(); ++i) {
      scores[i] = out[i].mean + kappa * std::sqrt(std::max(out[i].variance, 0.0));
    }
    return scores;
  };

  // Candidates: random places, the given params' and the observations'.
  std::vector<std::vector<double>> candidates;
  for (int i = 0; i < kCandidates; ++i) {
    std::vector<double> u(dims);
    for (double& v : u) v = rng.uniform();
    candidates.push_back(std::move(u));
  }
  if (std::optional<std::vector<double>> u = places(axes, params)) {
    candidates.push_back(std::move(*u));
  }
  for (const std::vector<double>& u : impl_->used_places) candidates.push_back(u);
  const std::vector<double> scores = ucb(candidates);
  std::vector<size_t> best(candidates.size());
  std::iota(best.begin(), best.end(), size_t{0});
  const size_t refined = std::min<size_t>(kRefined, best.size());
  std::partial_sort(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(refined), best.end(),
                    [&](size_t a, size_t b) { return scores[a] > scores[b]; });

  std::vector<double> winner = candidates[best[0]];
  double winner_score = scores[best[0]];
  for (size_t r = 0; r < refined; ++r) {
    std::vector<double> at = candidates[best[r]];
    double at_score = scores[best[r]];
    double radius = kRefineRadius;
    for (int round = 0; round < kRefineRounds; ++round, radius /= 2) {
      std::vector<std::vector<double>> near;
      for (int i = 0; i < kRefineSamples; ++i) {
        std::vector<double> u = at;
        for (double& v : u) v = std::clamp(v + rng.uniform(-radius, radius), 0.0, 1.0);
        near.push_back(std::move(u));
      }
      const std::vector<double> near_scores = ucb(near);
      for (size_t i = 0; i < near.size(); ++i) {
        if (near_scores[i] > at_score) {
          at_score = near_scores[i];
          at = near[i];
        }
      }
    }
    if (at_score > winner_score) {
      winner_score = at_score;
      winner = std::move(at);
    }
  }

  Params out = params;
  for (size_t i = 0; i < dims; ++i) out[axes[i].name] = decode(axes[i], winner[i]);
  return out;
}

std::optional<Params> pb2_select(
    std::span<const Pb2Observation> observations, std::span<const Params* const> pending,
    int64_t start_step, const Params& params,
    const std::map<std::string, Distribution, std::less<>>& distributions, double kappa, Rng& rng) {
  std::optional<Pb2Model> model =
      Pb2Model::fit(observations, start_step, params, distributions, rng);
  if (!model) return std::nullopt;
  return model->select(pending, params, kappa, rng);
}

}  // namespace tuner
