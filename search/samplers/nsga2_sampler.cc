#include "search/samplers/nsga2_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "search/pareto.h"
#include "search/samplers/random_sampler.h"
#include "trials/constraints.h"
#include "trials/error.h"
#include "trials/overloaded.h"

namespace tuner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void check_options(const Nsga2Options& o) {
  auto bad = [](const std::string& field, const std::string& why) {
    throw Error(ErrorCode::kInvalidArgument, "Nsga2Options." + field + ": " + why);
  };
  auto probability = [&](const std::string& field, double p) {
    if (!(p >= 0.0 && p <= 1.0)) bad(field, "must be in [0, 1] (got " + std::to_string(p) + ")");
  };
  if (o.population_size < 2) {
    bad("population_size", "must be >= 2 (got " + std::to_string(o.population_size) + ")");
  }
  probability("crossover_prob", o.crossover_prob);
  probability("swapping_prob", o.swapping_prob);
  if (o.mutation_prob) probability("mutation_prob", *o.mutation_prob);
  if (o.sbx_eta && !(*o.sbx_eta >= 0.0 && std::isfinite(*o.sbx_eta))) {
    bad("sbx_eta", "must be a finite number >= 0");
  }
  probability("sbx_use_child_gene_prob", o.sbx_use_child_gene_prob);
  probability("sbx_uniform_crossover_prob", o.sbx_uniform_crossover_prob);
}

// A COMPLETE trial with a value for every objective, none NaN.
bool ranked(const FrozenTrial& t, size_t m) {
  if (t.state != TrialState::kComplete || t.values.size() != m) return false;
  return std::none_of(t.values.begin(), t.values.end(), [](double v) { return std::isnan(v); });
}

// The trials' loss vectors (maximized objectives negated) and violations.
struct Scores {
  std::vector<double> losses;      // m a trial
  std::vector<double> violations;  // 0: feasible
};

Scores scores(const History& history, const std::vector<int>& numbers) {
  const size_t m = history.directions.size();
  Scores s;
  s.losses.reserve(numbers.size() * m);
  for (int number : numbers) {
    const FrozenTrial& t = history.trials[static_cast<size_t>(number)];
    for (size_t k = 0; k < m; ++k) {
      s.losses.push_back(as_loss(history.directions[k], t.values[k]));
    }
    s.violations.push_back(has_constraints(t) ? constraint_violation(constraints_of(t)) : 0.0);
  }
  return s;
}

// A numeric parameter in the space SBX works in: log-scaled where the distribution is, the
// range widened by half a step where it has steps. Empty for categorical and normal ones.
struct Scale {
  double low = 0, high = 0;
  bool log = false;
};

std::optional<Scale> sbx_scale(const Distribution& distribution) {
  return std::visit(
      Overloaded{
          [](const FloatDistribution& d) -> std::optional<Scale> {
            const double half = d.step ? *d.step / 2 : 0.0;
            if (d.log) return Scale{std::log(d.low), std::log(d.high), true};
            return Scale{d.low - half, d.high + half, false};
          },
          [](const IntDistribution& d) -> std::optional<Scale> {
            const double half = static_cast<double>(d.step) / 2;
            const double low = static_cast<double>(d.low) - half;
            const double high = static_cast<double>(d.high) + half;
            if (d.log) return Scale{std::log(low), std::log(high), true};
            return Scale{low, high, false};
          },
          [](const CategoricalDistribution&) -> std::optional<Scale> { return std::nullopt; },
          [](const NormalDistribution&) -> std::optional<Scale> { return std::nullopt; },
      },
      distribution);
}

double to_scale(const Distribution& distribution, const ParamValue& value, const Scale& scale) {
  const double x = to_internal(distribution, value);
  return scale.log ? std::log(x) : x;
}

ParamValue from_scale(const Distribution& distribution, double y, const Scale& scale) {
  double x = scale.log ? std::exp(y) : y;
  std::visit(Overloaded{
                 [&](const FloatDistribution& d) { x = std::clamp(x, d.low, d.high); },
                 [&](const IntDistribution& d) {
                   x = std::clamp(x, static_cast<double>(d.low), static_cast<double>(d.high));
                 },
                 [](const auto&) {},
             },
             distribution);
  return from_internal(distribution, x);
}

// Simulated binary crossover of x1 and x2 in [low, high] (the bounded form of Deb and Agrawal
// 1995, as Deb's NSGA-II code and Optuna's SBXCrossover): the two children's values.
std::pair<double, double> sbx_pair(double x1, double x2, double low, double high, double eta,
                                   Rng& rng) {
  const double lo = std::min(x1, x2), hi = std::max(x1, x2);
  const double diff = std::max(hi - lo, 1e-10);
  const double u = rng.uniform();
  auto spread = [&](double beta) {
    const double alpha = 2.0 - std::pow(beta, -(eta + 1.0));
    return u <= 1.0 / alpha ? std::pow(u * alpha, 1.0 / (eta + 1.0))
                            : std::pow(1.0 / (2.0 - u * alpha), 1.0 / (eta + 1.0));
  };
  const double beta_low = 1.0 + 2.0 * (lo - low) / diff;
  const double beta_high = 1.0 + 2.0 * (high - hi) / diff;
  return {0.5 * ((lo + hi) - spread(beta_low) * diff),
          0.5 * ((lo + hi) + spread(beta_high) * diff)};
}

// The parameters every COMPLETE trial has with one distribution, by name.
std::vector<std::pair<std::string, Distribution>> intersection(const History& history) {
  std::vector<std::pair<std::string, Distribution>> common;
  bool first = true;
  for (const FrozenTrial& t : history.trials) {
    if (t.state != TrialState::kComplete) continue;
    if (first) {
      for (const auto& [name, distribution] : t.distributions) {
        if (t.params.contains(name)) common.emplace_back(name, distribution);
      }
      first = false;
      continue;
    }
    std::erase_if(common, [&](const auto& entry) {
      auto it = t.distributions.find(entry.first);
      return it == t.distributions.end() || !(it->second == entry.second) ||
             !t.params.contains(entry.first);
    });
  }
  return common;
}

}  // namespace

std::vector<double> crowding_distances(std::span<const double> points, size_t m) {
  const size_t n = points.size() / m;
  std::vector<double> distance(n, 0.0);
  std::vector<size_t> order(n);
  for (size_t k = 0; k < m; ++k) {
    auto value = [&](size_t i) { return points[i * m + k]; };
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return value(a) < value(b); });
    if (n == 0 || value(order.front()) == value(order.back())) continue;
    // The range of the finite values (an infinite one would make every gap 0).
    double low = kInf, high = -kInf;
    for (size_t i = 0; i < n; ++i) {
      if (std::isfinite(value(i))) {
        low = std::min(low, value(i));
        high = std::max(high, value(i));
      }
    }
    const double width = high > low ? high - low : 1.0;
    for (size_t j = 0; j < n; ++j) {
      const double before = j > 0 ? value(order[j - 1]) : -kInf;
      const double after = j + 1 < n ? value(order[j + 1]) : kInf;
      distance[order[j]] += before == after ? 0.0 : (after - before) / width;
    }
  }
  return distance;
}

std::vector<size_t> nsga2_elite(std::span<const double> points, size_t m,
                                std::span<const double> violations, size_t size) {
  const size_t n = points.size() / m;
  std::vector<size_t> elite;
  if (n <= size) {
    elite.resize(n);
    std::iota(elite.begin(), elite.end(), size_t{0});
    return elite;
  }
  const std::vector<int> ranks = constrained_non_domination_ranks(points, m, violations);
  std::vector<std::vector<size_t>> by_rank;
  for (size_t i = 0; i < n; ++i) {
    const size_t r = static_cast<size_t>(ranks[i]);
    if (r >= by_rank.size()) by_rank.resize(r + 1);
    by_rank[r].push_back(i);
  }
  for (const std::vector<size_t>& front : by_rank) {
    if (elite.size() + front.size() <= size) {
      elite.insert(elite.end(), front.begin(), front.end());
      if (elite.size() == size) break;
      continue;
    }
    std::vector<double> front_points;
    for (size_t i : front) {
      front_points.insert(front_points.end(), points.begin() + static_cast<ptrdiff_t>(i * m),
                          points.begin() + static_cast<ptrdiff_t>((i + 1) * m));
    }
    const std::vector<double> distance = crowding_distances(front_points, m);
    std::vector<size_t> order(front.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (distance[a] != distance[b]) return distance[a] > distance[b];
      return front[a] < front[b];
    });
    for (size_t j = 0; elite.size() < size; ++j) elite.push_back(front[order[j]]);
    break;
  }
  std::sort(elite.begin(), elite.end());
  return elite;
}

Nsga2Sampler::Nsga2Sampler(Nsga2Options options) : options_(std::move(options)) {
  check_options(options_);
}

std::vector<int> Nsga2Sampler::parents(const History& history, int generation) const {
  const size_t m = history.directions.size();
  const size_t size = static_cast<size_t>(options_.population_size);
  std::vector<int> parents;
  for (int g = 0; g < generation; ++g) {
    // Generation g's COMPLETE trials and its parents, the elite of which are the next parents.
    std::vector<int> pool = parents;
    const size_t first = static_cast<size_t>(g) * size;
    const size_t last = std::min(first + size, history.trials.size());
    for (size_t i = first; i < last; ++i) {
      if (ranked(history.trials[i], m)) pool.push_back(static_cast<int>(i));
    }
    std::sort(pool.begin(), pool.end());
    // The same pool (the same trials, by id) gives the same elite: reuse the last one's.
    std::vector<int64_t> key;
    key.reserve(pool.size() + 1);
    key.push_back(static_cast<int64_t>(m));
    for (int number : pool) key.push_back(history.trials[static_cast<size_t>(number)].trial_id);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const size_t next = static_cast<size_t>(g) + 1;
      if (next < memo_.size() && memo_[next].pool_ids == key && key.size() > 1 &&
          std::none_of(key.begin() + 1, key.end(), [](int64_t id) { return id < 0; })) {
        parents = memo_[next].parents;
        continue;
      }
    }
    const Scores s = scores(history, pool);
    parents.clear();
    for (size_t j : nsga2_elite(s.losses, m, s.violations, size)) parents.push_back(pool[j]);
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t next = static_cast<size_t>(g) + 1;
    if (memo_.size() <= next) memo_.resize(next + 1);
    memo_[next] = {std::move(key), parents};
  }
  return parents;
}

Params Nsga2Sampler::sample(const SearchSpace& space, const History& history,
                            const TrialContext& trial, Rng& rng) {
  const std::vector<int> chosen = parents(history, trial.number / options_.population_size);
  // The parameters to cross: those of `space` that every COMPLETE trial has with their
  // distribution there.
  std::vector<std::pair<std::string, Distribution>> crossed;
  if (!chosen.empty()) {
    for (auto& [name, distribution] : intersection(history)) {
      const ParamSpec* spec = space.find(name);
      if (spec && spec->distribution == distribution && !is_single(distribution)) {
        crossed.emplace_back(name, distribution);
      }
    }
  }
  Params child;
  if (!crossed.empty()) {
    const size_t m = history.directions.size();
    const Scores s = scores(history, chosen);
    const size_t n = chosen.size();
    // A binary tournament among the parents other than `excluded` (index, or n for none).
    auto tournament = [&](size_t excluded) {
      std::vector<size_t> candidates;
      for (size_t j = 0; j < n; ++j) {
        if (j != excluded) candidates.push_back(j);
      }
      const int64_t last = static_cast<int64_t>(candidates.size()) - 1;
      const size_t a = candidates[static_cast<size_t>(rng.integer(0, last))];
      const size_t b = candidates[static_cast<size_t>(rng.integer(0, last))];
      return constrained_dominates(&s.losses[a * m], s.violations[a], &s.losses[b * m],
                                   s.violations[b], m)
                 ? a
                 : b;
    };
    auto param = [&](size_t parent, const std::string& name) -> const ParamValue& {
      return history.trials[static_cast<size_t>(chosen[parent])].params.at(name);
    };
    if (n >= 2 && rng.uniform() < options_.crossover_prob) {
      const size_t first = tournament(n);
      const size_t second = tournament(first);
      const double eta = options_.sbx_eta.value_or(m > 1 ? 20.0 : 2.0);
      // SBX makes two children; one of them is kept, drawn after every parameter's values.
      Params other;
      for (const auto& [name, distribution] : crossed) {
        const std::optional<Scale> scale =
            options_.crossover == Nsga2Crossover::kSbx ? sbx_scale(distribution) : std::nullopt;
        if (!scale) {
          const ParamValue& v =
              param(rng.uniform() < options_.swapping_prob ? first : second, name);
          child.emplace(name, v);
          other.emplace(name, v);
          continue;
        }
        const double x1 = to_scale(distribution, param(first, name), *scale);
        const double x2 = to_scale(distribution, param(second, name), *scale);
        auto [c1, c2] = sbx_pair(x1, x2, scale->low, scale->high, eta, rng);
        if (rng.uniform() >= options_.sbx_use_child_gene_prob) std::tie(c1, c2) = std::pair{x1, x2};
        if (rng.uniform() < options_.sbx_uniform_crossover_prob) std::swap(c1, c2);
        child.emplace(name, from_scale(distribution, c1, *scale));
        other.emplace(name, from_scale(distribution, c2, *scale));
      }
      if (options_.crossover == Nsga2Crossover::kSbx && rng.uniform() < 0.5)
        child = std::move(other);
    } else {
      const size_t parent = static_cast<size_t>(rng.integer(0, static_cast<int64_t>(n) - 1));
      for (const auto& [name, distribution] : crossed) child.emplace(name, param(parent, name));
    }
    const double mutation =
        options_.mutation_prob.value_or(1.0 / static_cast<double>(crossed.size()));
    for (const auto& [name, distribution] : crossed) {
      if (rng.uniform() < mutation) child.erase(name);
    }
  }
  Params params;
  for (const ParamSpec& spec : space.params()) {
    if (!space.is_active(spec, params)) continue;
    auto it = child.find(spec.name);
    if (it != child.end() && contains(spec.distribution, it->second)) {
      params.emplace(spec.name, it->second);
    } else {
      params.emplace(spec.name, RandomSampler::draw(spec.distribution, rng));
    }
  }
  return params;
}

ParamValue Nsga2Sampler::sample_independent(const std::string&, const Distribution& distribution,
                                            const History&, const TrialContext&, Rng& rng) {
  return RandomSampler::draw(distribution, rng);
}

SearchSpace Nsga2Sampler::relative_space(const History& history) {
  SearchSpace space;
  for (auto& [name, distribution] : intersection(history)) {
    if (!is_single(distribution)) space.add(ParamSpec{name, distribution, std::nullopt, false});
  }
  return space;
}

}  // namespace tuner
