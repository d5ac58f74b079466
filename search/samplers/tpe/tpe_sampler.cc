#include "search/samplers/tpe/tpe_sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

#include "search/pareto.h"
#include "search/samplers/random_sampler.h"
#include "search/samplers/tpe/parzen_estimator.h"
#include "trials/constraints.h"
#include "trials/error.h"

namespace tuner {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The weight of a "below" trial that adds no hypervolume: small, so that its kernel stays in the
// mixture.
constexpr double kHypervolumeWeightFloor = 1e-12;

enum Role : uint8_t { kNone = 0, kBelow = 1, kAbove = 2 };

using NamedDistributions = std::vector<std::pair<std::string, Distribution>>;  // sorted by name

// The internal representation of trial's value for `name` if it lies in `distribution`, else NaN.
double extract(const FrozenTrial& trial, const std::string& name,
               const Distribution& distribution) {
  auto it = trial.params.find(name);
  if (it == trial.params.end()) return kNaN;
  auto dit = trial.distributions.find(name);
  bool same = dit != trial.distributions.end() && dit->second == distribution;
  if (!same && !contains(distribution, it->second)) return kNaN;
  try {
    return to_internal(distribution, it->second);
  } catch (const Error&) {
    return kNaN;
  }
}

void check_options(const TpeOptions& o) {
  auto bad = [](const std::string& field, const std::string& why) {
    throw Error(ErrorCode::kInvalidArgument, "TpeOptions." + field + ": " + why);
  };
  if (o.n_startup_trials < 0) bad("n_startup_trials", "must be >= 0");
  if (o.n_ei_candidates < 1) bad("n_ei_candidates", "must be >= 1");
  if (!(o.prior_weight >= 0.0) || !std::isfinite(o.prior_weight)) {
    bad("prior_weight", "must be a finite number >= 0");
  }
  if (o.group && !o.multivariate) bad("group", "requires multivariate = true");
}

}  // namespace

int tpe_default_gamma(int n) {
  return std::min(static_cast<int>(std::ceil(0.1 * static_cast<double>(n))), 25);
}

int tpe_default_gamma_multi_objective(int n) {
  return static_cast<int>(std::ceil(0.1 * static_cast<double>(n)));
}

std::vector<size_t> tpe_multi_objective_below(std::span<const double> losses, size_t n_objectives,
                                              size_t n_below) {
  const size_t n = losses.size() / n_objectives;
  std::vector<size_t> below;
  if (n_below >= n) {
    below.resize(n);
    std::iota(below.begin(), below.end(), size_t{0});
    return below;
  }
  if (n_below == 0) return below;
  const std::vector<int> ranks = leading_non_domination_ranks(losses, n_objectives, n_below);
  // The ranks that fit whole: their sizes add up to at most n_below.
  std::vector<size_t> per_rank;
  for (int r : ranks) {
    if (static_cast<size_t>(r) >= per_rank.size()) per_rank.resize(static_cast<size_t>(r) + 1, 0);
    ++per_rank[static_cast<size_t>(r)];
  }
  int whole = -1;
  size_t total = 0;
  while (static_cast<size_t>(whole + 1) < per_rank.size() &&
         total + per_rank[static_cast<size_t>(whole + 1)] <= n_below) {
    total += per_rank[static_cast<size_t>(++whole)];
  }
  // The rank after them gives the rest, by hypervolume; none when they fit exactly (then that
  // rank is every point left, which the leading ranks did not sort).
  const bool partial = total < n_below;
  std::vector<size_t> next;
  std::vector<double> next_losses;
  for (size_t i = 0; i < n; ++i) {
    if (ranks[i] <= whole) {
      below.push_back(i);
    } else if (partial && ranks[i] == whole + 1) {
      next.push_back(i);
      const auto row = losses.begin() + static_cast<ptrdiff_t>(i * n_objectives);
      next_losses.insert(next_losses.end(), row, row + static_cast<ptrdiff_t>(n_objectives));
    }
  }
  if (partial) {
    const std::vector<double> reference = nadir_reference(next_losses, n_objectives);
    for (size_t j :
         select_by_hypervolume(next_losses, n_objectives, n_below - below.size(), reference)) {
      below.push_back(next[j]);
    }
  }
  std::sort(below.begin(), below.end());
  return below;
}

std::vector<double> tpe_hypervolume_weights(std::span<const double> losses, size_t n_objectives) {
  const size_t n = losses.size() / n_objectives;
  std::vector<double> w(n, kHypervolumeWeightFloor);
  if (n == 0) return w;
  const std::vector<double> reference = nadir_reference(losses, n_objectives);
  const std::vector<size_t> front = pareto_front(losses, n_objectives);
  std::vector<double> front_losses;
  for (size_t i : front) {
    const auto row = losses.begin() + static_cast<ptrdiff_t>(i * n_objectives);
    front_losses.insert(front_losses.end(), row, row + static_cast<ptrdiff_t>(n_objectives));
  }
  const std::vector<double> contributions =
      hypervolume_contributions(front_losses, n_objectives, reference);
  double largest = 0.0;
  for (double c : contributions) {
    if (!std::isfinite(c)) return std::vector<double>(n, 1.0);  // volumes beyond doubles
    largest = std::max(largest, c);
  }
  for (size_t j = 0; j < front.size(); ++j) {
    w[front[j]] = std::max(contributions[j] / std::max(largest, kHypervolumeWeightFloor),
                           kHypervolumeWeightFloor);
  }
  return w;
}

std::vector<double> tpe_default_weights(int n) {
  if (n <= 0) return {};
  std::vector<double> w(static_cast<size_t>(n), 1.0);
  if (n < 25) return w;
  // linspace(1/n, 1, n - 25) for the oldest, then 25 ones.
  const int ramp = n - 25;
  const double lo = 1.0 / n;
  for (int i = 0; i < ramp; ++i) {
    w[static_cast<size_t>(i)] = ramp == 1 ? lo : lo + (1.0 - lo) * i / (ramp - 1);
  }
  return w;
}

std::vector<double> tpe_improvement_weights(const std::vector<double>& losses, double threshold) {
  std::vector<double> w(losses.size(), 1.0);
  double largest = 0.0;
  for (double loss : losses) largest = std::max(largest, threshold - loss);
  if (!(largest > 0.0) || !std::isfinite(largest)) return w;
  // Relative to the largest gain (no sum can overflow); a trial that ties the threshold keeps a
  // sliver of weight: its kernel stays in the mixture.
  double sum = 0.0;
  for (size_t i = 0; i < losses.size(); ++i) {
    w[i] = std::max((threshold - losses[i]) / largest, 1e-12);
    sum += w[i];
  }
  const double scale = static_cast<double>(losses.size()) / sum;
  for (double& x : w) x *= scale;
  return w;
}

// One parameter with one distribution: every cached finished trial's value.
struct Column {
  std::string name;
  Distribution distribution;
  std::vector<double> value;  // by trial number; NaN: absent, unfinished or outside
  std::vector<int> sorted;    // numbers of cached trials with a value, by (value, number)
};

namespace {

// Whether the model learns from finished trial `t` (and it counts toward n_startup_trials): a
// COMPLETE or PRUNED trial that violates a constraint, any other PRUNED one, and a COMPLETE one
// with a first value that is not NaN (with several objectives: one value each, none NaN).
bool is_observed(const FrozenTrial& t, size_t n_objectives) {
  if (t.state != TrialState::kComplete && t.state != TrialState::kPruned) return false;
  if (t.state == TrialState::kPruned) return true;
  if (has_constraints(t) && constraint_violation(constraints_of(t)) > 0) return true;
  if (t.values.empty() || std::isnan(t.values[0])) return false;
  if (n_objectives == 1) return true;
  return t.values.size() == n_objectives &&
         std::none_of(t.values.begin(), t.values.end(), [](double x) { return std::isnan(x); });
}

}  // namespace

// The trials the estimators see, by position: with a warm start (History::prior), its
// observations first, then the study's trials, as one sequence (the study's trial n at position
// offset + n); otherwise the history's trials. The observations get ids of their own (positive,
// from a hash of the whole prior: their ids in another storage may be another prior's), so that
// the cache, which checks ids by position, resets when the sampler is given another prior.
struct TpeSampler::View {
  explicit View(const History& h) : history(h), offset(h.prior.size()) {
    if (offset == 0) return;
    uint64_t hash = 0xcbf29ce484222325ULL;
    auto mix = [&hash](uint64_t bits) {
      hash = (hash ^ bits) * 0x100000001b3ULL;
      hash ^= hash >> 29;
    };
    for (const FrozenTrial& t : h.prior) {
      mix(static_cast<uint64_t>(t.trial_id));
      mix(t.params.size());
      for (double v : t.values) mix(std::bit_cast<uint64_t>(v));
    }
    prior_ids.reserve(offset);
    for (size_t i = 0; i < offset; ++i) {
      mix(i);
      prior_ids.push_back(static_cast<int64_t>(hash >> 2) | (int64_t{1} << 61));
    }
  }

  size_t size() const { return offset + history.trials.size(); }
  const FrozenTrial& operator[](size_t i) const {
    return i < offset ? history.prior[i] : history.trials[i - offset];
  }
  int64_t id(size_t i) const { return i < offset ? prior_ids[i] : (*this)[i].trial_id; }
  // The trial's number in the sequence (its position, when the history keeps its contract).
  int number(size_t i) const {
    return i < offset ? history.prior[i].number
                      : history.trials[i - offset].number + static_cast<int>(offset);
  }
  // The position of the study's trial `study_number`.
  int position(int study_number) const { return study_number + static_cast<int>(offset); }

  const History& history;
  const size_t offset;  // prior.size()
  std::vector<int64_t> prior_ids;
};

struct TpeSampler::Cache {
  struct Entry {
    int64_t trial_id = -1;
    bool cached = false;  // finished and ingested
  };

  uint64_t generation = 0;
  StudyDirection direction = StudyDirection::kMinimize;  // the first objective's
  std::vector<StudyDirection> directions;
  size_t n_objectives = 1;
  bool rebuild_next = false;  // a finished trial had no trial_id: it cannot be checked next time
  std::vector<Entry> trials;  // by number
  std::vector<double> score;  // COMPLETE: the loss; PRUNED: the last value as a loss
  std::vector<double> step;   // PRUNED: -(last step), 1 without intermediate values
  std::vector<double> violation;  // infeasible: the sum of the positive constraint values; else 0
  // Several objectives: each feasible COMPLETE trial's values as losses (maximized ones negated),
  // n_objectives a trial, by number; NaN otherwise.
  std::vector<double> losses;
  std::vector<int> complete;  // numbers of feasible COMPLETE trials, best first (ties by number)
  std::vector<int> pruned;    // numbers of feasible PRUNED trials, best first
  // Numbers of the COMPLETE and PRUNED trials that violate a constraint, least violation first
  // (ties by number): ranked after every feasible trial, as Optuna's TPESampler does.
  std::vector<int> infeasible;
  std::vector<std::unique_ptr<Column>> columns;
  std::optional<NamedDistributions> intersection;
  std::vector<NamedDistributions> groups;

  void resize(size_t n) {
    trials.resize(n);
    score.resize(n, kNaN);
    step.resize(n, kNaN);
    violation.resize(n, 0.0);
    if (n_objectives > 1) losses.resize(n * n_objectives, kNaN);
    for (auto& c : columns) c->value.resize(n, kNaN);
  }

  void insert_sorted(Column& c, int number) {
    auto less = [&](int a, int b) {
      double va = c.value[static_cast<size_t>(a)];
      double vb = c.value[static_cast<size_t>(b)];
      return va < vb || (va == vb && a < b);
    };
    c.sorted.insert(std::lower_bound(c.sorted.begin(), c.sorted.end(), number, less), number);
  }

  Column& column(const std::string& name, const Distribution& distribution, const View& view) {
    for (auto& c : columns) {
      if (c->name == name && c->distribution == distribution) return *c;
    }
    auto c = std::make_unique<Column>();
    c->name = name;
    c->distribution = distribution;
    c->value.assign(trials.size(), kNaN);
    for (size_t i = 0; i < trials.size(); ++i) {
      if (!trials[i].cached) continue;
      TrialState s = view[i].state;
      if (s != TrialState::kComplete && s != TrialState::kPruned) continue;
      c->value[i] = extract(view[i], name, distribution);
      if (!std::isnan(c->value[i])) c->sorted.push_back(static_cast<int>(i));
    }
    std::stable_sort(c->sorted.begin(), c->sorted.end(), [&](int a, int b) {
      return c->value[static_cast<size_t>(a)] < c->value[static_cast<size_t>(b)];
    });
    columns.push_back(std::move(c));
    return *columns.back();
  }

  // Trial `t` at position `number`, with id `id` (View).
  void ingest(const FrozenTrial& t, int number, int64_t id) {
    const size_t i = static_cast<size_t>(number);
    trials[i].trial_id = id;
    trials[i].cached = true;
    if (!is_observed(t, n_objectives)) return;
    const double violated = has_constraints(t) ? constraint_violation(constraints_of(t)) : 0.0;
    if (violated > 0) {
      violation[i] = violated;
      auto less = [&](int a, int b) {
        return violation[static_cast<size_t>(a)] < violation[static_cast<size_t>(b)] ||
               (violation[static_cast<size_t>(a)] == violation[static_cast<size_t>(b)] && a < b);
      };
      infeasible.insert(std::lower_bound(infeasible.begin(), infeasible.end(), number, less),
                        number);
    } else if (t.state == TrialState::kComplete) {
      if (n_objectives > 1) {
        for (size_t k = 0; k < n_objectives; ++k) {
          losses[i * n_objectives + k] = as_loss(directions[k], t.values[k]);
        }
      }
      score[i] = as_loss(direction, t.values[0]);
      auto less = [&](int a, int b) {
        return score[static_cast<size_t>(a)] < score[static_cast<size_t>(b)] ||
               (score[static_cast<size_t>(a)] == score[static_cast<size_t>(b)] && a < b);
      };
      complete.insert(std::lower_bound(complete.begin(), complete.end(), number, less), number);
    } else if (t.state == TrialState::kPruned) {
      // Optuna's order: more steps first, then the better last value; NaN last.
      if (t.intermediate_values.empty()) {
        step[i] = 1.0;
        score[i] = 0.0;
      } else {
        auto [last_step, v] = *t.intermediate_values.rbegin();
        step[i] = -static_cast<double>(last_step);
        score[i] = std::isnan(v) ? std::numeric_limits<double>::infinity() : as_loss(direction, v);
      }
      auto less = [&](int a, int b) {
        size_t x = static_cast<size_t>(a), y = static_cast<size_t>(b);
        if (step[x] != step[y]) return step[x] < step[y];
        if (score[x] != score[y]) return score[x] < score[y];
        return a < b;
      };
      pruned.insert(std::lower_bound(pruned.begin(), pruned.end(), number, less), number);
    }
    for (auto& c : columns) {
      c->value[i] = extract(t, c->name, c->distribution);
      if (!std::isnan(c->value[i])) insert_sorted(*c, number);
    }
    update_spaces(t);
  }

  // True when a trial's parameters are exactly the intersection, which is also the only group:
  // then update_spaces() changes nothing (the usual case of a study without conditions).
  bool same_as_spaces(const FrozenTrial& t) const {
    if (!intersection || groups.size() != 1 || groups[0].size() != intersection->size()) {
      return false;
    }
    if (t.params.size() != intersection->size()) return false;
    auto entry = intersection->begin();
    auto group_entry = groups[0].begin();
    for (const auto& [name, value] : t.params) {
      auto it = t.distributions.find(name);
      if (it == t.distributions.end() || entry->first != name || group_entry->first != name ||
          !(entry->second == it->second) || !(group_entry->second == it->second)) {
        return false;
      }
      ++entry;
      ++group_entry;
    }
    return true;
  }

  // Optuna's IntersectionSearchSpace and _SearchSpaceGroup, updated with one finished trial.
  void update_spaces(const FrozenTrial& t) {
    if (same_as_spaces(t)) return;
    NamedDistributions mine;
    for (const auto& [name, value] : t.params) {
      auto it = t.distributions.find(name);
      if (it != t.distributions.end()) mine.emplace_back(name, it->second);
    }
    if (!intersection) {
      intersection = mine;
    } else {
      NamedDistributions next;
      for (auto& entry : *intersection) {
        auto it = std::lower_bound(mine.begin(), mine.end(), entry.first,
                                   [](const auto& e, const std::string& n) { return e.first < n; });
        if (it != mine.end() && it->first == entry.first && it->second == entry.second) {
          next.push_back(entry);
        }
      }
      intersection = std::move(next);
    }
    std::vector<NamedDistributions> next;
    NamedDistributions rest = mine;  // names not yet in a group
    for (const auto& g : groups) {
      NamedDistributions both, only_group;
      for (const auto& entry : g) {
        auto it = std::lower_bound(rest.begin(), rest.end(), entry.first,
                                   [](const auto& e, const std::string& n) { return e.first < n; });
        bool in_trial =
            std::binary_search(mine.begin(), mine.end(), entry,
                               [](const auto& a, const auto& b) { return a.first < b.first; });
        (in_trial ? both : only_group).push_back(entry);
        if (it != rest.end() && it->first == entry.first) rest.erase(it);
      }
      if (!both.empty()) next.push_back(std::move(both));
      if (!only_group.empty()) next.push_back(std::move(only_group));
    }
    if (!rest.empty()) next.push_back(std::move(rest));
    groups = std::move(next);
  }
};

// What one call sees: the split of the history's trials, computed for one cache generation.
struct TpeSampler::Call {
  const View* view = nullptr;
  int number = 0;
  uint64_t generation = 0;
  int n_finished = 0;            // COMPLETE + PRUNED
  std::vector<uint8_t> role;     // by number
  std::vector<int> running;      // RUNNING trials that are lied about (constant liar)
  std::shared_ptr<Split> split;  // where this split came from, with what derives from it
};

// One begin_call()'s split, kept for the next calls with the same key, and what sample_group()
// derives from it whatever the parameters. Derived parts are filled lazily, under mutex_.
struct TpeSampler::Split {
  // Key.
  uint64_t version = 0;
  int number = 0;
  size_t n = 0;
  std::vector<int> all_running;  // RUNNING trials other than `number`, liar or not
  // The split.
  std::vector<uint8_t> role;
  std::vector<int> running;
  int n_finished = 0;
  // Derived: every trial with a role as a kernel (no parameter leaves one out).
  bool derived = false;
  std::vector<int> code;           // by number: -1, or rank * 2 + group (0: below, 1: above)
  std::vector<int> running_index;  // by number: index in `running`, or -1
  std::vector<int> members[2];     // numbers of each group's kernels, ascending
  bool weights_ready = false;
  std::vector<double> weights[2];  // default weights of each group's kernels
  bool improvement_ready = false;
  std::vector<double> improvement;  // below_weights() of the below kernels; empty: the default

  // Fills the derived code, running_index and members (once). REQUIRES: n_trials == role.size().
  void derive(size_t n_trials);
};

TpeSampler::TpeSampler(TpeOptions options) : options_(std::move(options)) {
  check_options(options_);
}

TpeSampler::~TpeSampler() = default;

bool TpeSampler::joint(const History& history) const {
  if (history.directions.size() > 1) return options_.multi_objective_multivariate || options_.group;
  return options_.multivariate;
}

void TpeSampler::sync(const View& view) {
  const History& history = view.history;
  const size_t n = view.size();
  bool reset = !cache_ || cache_->rebuild_next ||
               !std::equal(cache_->directions.begin(), cache_->directions.end(),
                           history.directions.begin(), history.directions.end()) ||
               n < cache_->trials.size();
  if (!reset) {
    for (size_t i = 0; i < cache_->trials.size(); ++i) {
      if (cache_->trials[i].cached && cache_->trials[i].trial_id != view.id(i)) {
        reset = true;
        break;
      }
    }
  }
  if (reset) {
    uint64_t generation = cache_ ? cache_->generation + 1 : 0;
    cache_ = std::make_unique<Cache>();
    cache_->generation = generation;
    cache_->direction = history.direction();
    cache_->directions.assign(history.directions.begin(), history.directions.end());
    cache_->n_objectives = history.directions.size();
    ++cache_version_;
  }
  cache_->resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (cache_->trials[i].cached) continue;
    const FrozenTrial& t = view[i];
    if (!is_finished(t.state)) continue;
    if (view.number(i) != static_cast<int>(i)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "TpeSampler: " +
                      (i < view.offset ? "history.prior[" + std::to_string(i)
                                       : "history.trials[" + std::to_string(i - view.offset)) +
                      "] has number " + std::to_string(t.number) +
                      "; trials must be ordered by number");
    }
    if (view.id(i) < 0) cache_->rebuild_next = true;
    ++cache_version_;
    cache_->ingest(t, static_cast<int>(i), view.id(i));
  }
}

std::string TpeSampler::origin(const SearchSpace&, const History& history) const {
  const size_t n_objectives = history.directions.size();
  auto is = [&](const FrozenTrial& t) { return is_observed(t, n_objectives); };
  const auto observed = std::count_if(history.prior.begin(), history.prior.end(), is) +
                        std::count_if(history.trials.begin(), history.trials.end(), is);
  return observed < options_.n_startup_trials ? "random" : name();
}

TpeSampler::Call TpeSampler::begin_call(const View& view, const TrialContext& trial) {
  sync(view);
  Call call;
  call.view = &view;
  call.number = trial.number;
  call.generation = cache_->generation;
  const size_t n = view.size();
  std::vector<int> all_running;
  for (size_t i = 0; i < n; ++i) {
    if (cache_->trials[i].cached) continue;
    const FrozenTrial& t = view[i];
    if (t.state == TrialState::kRunning && view.number(i) != trial.number) {
      all_running.push_back(static_cast<int>(i));
    }
  }
  if (last_split_ && last_split_->version == cache_version_ &&
      last_split_->number == trial.number && last_split_->n == n &&
      last_split_->all_running == all_running) {
    const Split& s = *last_split_;
    call.role = s.role;
    call.running = s.running;
    call.n_finished = s.n_finished;
    call.split = last_split_;
    return call;
  }
  call.role.assign(n, kNone);
  const bool any_running = !all_running.empty();
  call.running = all_running;
  bool liar = options_.constant_liar == ConstantLiar::kOn ||
              (options_.constant_liar == ConstantLiar::kAuto && any_running);
  if (!liar) call.running.clear();
  const auto& complete = cache_->complete;
  const auto& pruned = cache_->pruned;
  const auto& infeasible = cache_->infeasible;
  call.n_finished = static_cast<int>(complete.size() + pruned.size() + infeasible.size());
  const bool multi = cache_->n_objectives > 1;
  int n_below = options_.gamma ? options_.gamma(call.n_finished)
                : multi        ? tpe_default_gamma_multi_objective(call.n_finished)
                               : tpe_default_gamma(call.n_finished);
  n_below = std::clamp(n_below, 0, call.n_finished);
  for (int number : complete) call.role[static_cast<size_t>(number)] = kAbove;
  for (int number : pruned) call.role[static_cast<size_t>(number)] = kAbove;
  for (int number : infeasible) call.role[static_cast<size_t>(number)] = kAbove;
  // Below: the best feasible COMPLETE trials, then feasible PRUNED ones, then the least
  // infeasible ones, until n_below.
  const size_t c = complete.size(), p = pruned.size();
  int first = 0;
  if (multi) {
    // The best of several objectives: by non-domination rank, the last rank that does not fit
    // whole by hypervolume (tpe_multi_objective_below()).
    std::vector<int> numbers(complete.begin(), complete.end());
    std::sort(numbers.begin(), numbers.end());
    const size_t m = cache_->n_objectives;
    std::vector<double> losses(numbers.size() * m);
    for (size_t j = 0; j < numbers.size(); ++j) {
      std::copy_n(cache_->losses.begin() + static_cast<ptrdiff_t>(numbers[j] * m), m,
                  losses.begin() + static_cast<ptrdiff_t>(j * m));
    }
    const size_t k = std::min(c, static_cast<size_t>(n_below));
    for (size_t j : tpe_multi_objective_below(losses, m, k)) {
      call.role[static_cast<size_t>(numbers[j])] = kBelow;
    }
    first = static_cast<int>(k);
  }
  for (int j = first; j < n_below; ++j) {
    const size_t k = static_cast<size_t>(j);
    int number = k < c ? complete[k] : k < c + p ? pruned[k - c] : infeasible[k - c - p];
    call.role[static_cast<size_t>(number)] = kBelow;
  }
  for (int number : call.running) call.role[static_cast<size_t>(number)] = kAbove;
  auto split = std::make_shared<Split>();
  split->version = cache_version_;
  split->number = trial.number;
  split->n = n;
  split->all_running = std::move(all_running);
  split->role = call.role;
  split->running = call.running;
  split->n_finished = call.n_finished;
  call.split = split;
  last_split_ = std::move(split);
  return call;
}

namespace {

std::vector<double> checked_weights(const TpeOptions& options, int n) {
  if (!options.weights) return tpe_default_weights(n);
  std::vector<double> w = options.weights(n);
  if (w.size() < static_cast<size_t>(n)) {
    throw Error(ErrorCode::kInvalidArgument, "TpeOptions.weights(" + std::to_string(n) +
                                                 ") returned " + std::to_string(w.size()) +
                                                 " values; it must return at least " +
                                                 std::to_string(n));
  }
  w.resize(static_cast<size_t>(n));
  double sum = 0.0;
  for (double x : w) {
    if (!(x >= 0.0) || !std::isfinite(x)) {
      throw Error(ErrorCode::kInvalidArgument, "TpeOptions.weights(" + std::to_string(n) +
                                                   ") returned a negative or non-finite value");
    }
    sum += x;
  }
  if (n > 0 && !(sum > 0.0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "TpeOptions.weights(" + std::to_string(n) + ") returned only zeros");
  }
  return w;
}

// The observations of one group of trials (below or above) over some dimensions.
struct GroupObservations {
  std::vector<std::vector<double>> columns;  // [dim][kernel]
  std::vector<std::vector<int>> sorted;      // [dim]: kernels by value
  std::vector<double> weights;
};

// The values of the lied-about RUNNING trials, which the cache does not hold.
struct RunningValues {
  std::vector<double> values;  // [running trial * n_dims + dim]; NaN: absent or outside
  std::vector<bool> ok;        // [running trial]: a value in every dimension

  bool all_ok() const {
    return std::all_of(ok.begin(), ok.end(), [](bool b) { return b; });
  }
};

// `running`: the lied-about trials, in order.
RunningValues running_values(const std::vector<const FrozenTrial*>& running,
                             const std::vector<std::string>& names,
                             const std::vector<Distribution>& dims) {
  const size_t n_dims = dims.size();
  RunningValues out{std::vector<double>(running.size() * n_dims),
                    std::vector<bool>(running.size(), true)};
  for (size_t r = 0; r < running.size(); ++r) {
    const FrozenTrial& t = *running[r];
    for (size_t d = 0; d < n_dims; ++d) {
      double v = extract(t, names[d], dims[d]);
      out.values[r * n_dims + d] = v;
      if (std::isnan(v)) out.ok[r] = false;
    }
  }
  return out;
}

// Each group's kernel values in every dimension: the cached columns' at `members` (trial numbers
// by group), the running trials' (placed by `code`, see Split) from `running_values`. False
// when a kernel lacks a value (then `groups` is partly filled).
bool gather_columns(const std::vector<int> (&members)[2], const std::vector<int>& code,
                    const std::vector<int>& running, const std::vector<Column*>& cols,
                    const std::vector<double>& running_values, GroupObservations (&groups)[2]) {
  const size_t n_dims = cols.size();
  for (int g = 0; g < 2; ++g) {
    GroupObservations& obs = groups[g];
    const std::vector<int>& m = members[g];
    const size_t mn = m.size();
    obs.columns.resize(n_dims);
    for (size_t d = 0; d < n_dims; ++d) {
      std::vector<double>& col = obs.columns[d];
      col.resize(mn);
      double* out = col.data();
      const double* value = cols[d]->value.data();
      const int* mem = m.data();
      for (size_t j = 0; j < mn; ++j) out[j] = value[static_cast<size_t>(mem[j])];
      for (size_t r = 0; r < running.size(); ++r) {
        const int c = code[static_cast<size_t>(running[r])];
        if ((c & 1) == g) out[static_cast<size_t>(c >> 1)] = running_values[r * n_dims + d];
      }
      bool any_nan = false;
      for (size_t j = 0; j < mn; ++j) any_nan |= std::isnan(out[j]);
      if (any_nan) return false;
    }
  }
  return true;
}

// The kernels of the trials with a role that have a value in every dimension (the running ones:
// running_ok), when some lack one.
struct FilteredKernels {
  std::vector<int> running_index;  // by number: index in the running trials, or -1
  std::vector<int> code;           // by number: -1, or rank * 2 + group (0: below, 1: above)
  std::vector<int> members[2];     // numbers of each group's kernels, ascending
};

FilteredKernels filter_kernels(const std::vector<uint8_t>& role, const std::vector<int>& running,
                               const std::vector<bool>& running_ok,
                               const std::vector<Column*>& cols, size_t n) {
  FilteredKernels f;
  f.running_index.assign(n, -1);
  for (size_t r = 0; r < running.size(); ++r) {
    f.running_index[static_cast<size_t>(running[r])] = static_cast<int>(r);
  }
  // The kernels of each group in trial-number order (the weights favour recent trials), and
  // each trial's index among them (rank).
  f.code.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (role[i] == kNone) continue;
    const int r = f.running_index[i];
    bool ok = true;
    if (r >= 0) {
      ok = running_ok[static_cast<size_t>(r)];
    } else {
      for (const Column* col : cols) ok &= !std::isnan(col->value[i]);
    }
    if (!ok) continue;
    const int g = role[i] == kBelow ? 0 : 1;
    std::vector<int>& m = f.members[g];
    f.code[i] = static_cast<int>(m.size()) * 2 + g;
    m.push_back(static_cast<int>(i));
  }
  return f;
}

// Each group's kernel values in every dimension, for filter_kernels()' kernels.
void gather_filtered_columns(const FilteredKernels& f, const std::vector<Column*>& cols,
                             const std::vector<double>& running_values,
                             GroupObservations (&groups)[2]) {
  const size_t n_dims = cols.size();
  for (int g = 0; g < 2; ++g) {
    const std::vector<int>& m = f.members[g];
    groups[g].columns.assign(n_dims, std::vector<double>(m.size()));
    for (size_t d = 0; d < n_dims; ++d) {
      double* out = groups[g].columns[d].data();
      const double* value = cols[d]->value.data();
      for (size_t j = 0; j < m.size(); ++j) {
        const size_t i = static_cast<size_t>(m[j]);
        const int r = f.running_index[i];
        out[j] = r >= 0 ? running_values[static_cast<size_t>(r) * n_dims + d] : value[i];
      }
    }
  }
}

// Each group's kernels (ranks) by value in every dimension: the cached sorted columns, filtered
// by `code` (see Split), merged with the running trials' values. `presized`: each order already
// holds as many entries as its group has kernels, every one with a value in every dimension.
void sort_kernels(const std::vector<int>& code, const std::vector<int>& running,
                  const std::vector<double>& running_values, const std::vector<Column*>& cols,
                  size_t n, bool presized, GroupObservations (&groups)[2]) {
  const size_t n_dims = cols.size();
  std::vector<std::pair<double, int>> extra[2];
  for (size_t d = 0; d < n_dims; ++d) {
    for (auto& e : extra) e.clear();
    for (size_t r = 0; r < running.size(); ++r) {
      const int c = code[static_cast<size_t>(running[r])];
      if (c < 0) continue;
      extra[c & 1].emplace_back(running_values[r * n_dims + d], c >> 1);
    }
    for (auto& e : extra) std::sort(e.begin(), e.end());
    size_t next[2] = {0, 0};
    const double* value = cols[d]->value.data();
    std::vector<int>* out_sorted[2] = {&groups[0].sorted[d], &groups[1].sorted[d]};
    if (presized && extra[0].empty() && extra[1].empty()) {
      int* out[2] = {out_sorted[0]->data(), out_sorted[1]->data()};
      size_t filled[2] = {0, 0};
      for (int number : cols[d]->sorted) {
        const size_t i = static_cast<size_t>(number);
        if (i >= n) continue;
        const int c = code[i];
        if (c < 0) continue;
        out[c & 1][filled[c & 1]++] = c >> 1;
      }
    } else {
      for (auto* o : out_sorted) o->clear();
      for (int number : cols[d]->sorted) {
        const size_t i = static_cast<size_t>(number);
        if (i >= n) continue;
        const int c = code[i];
        if (c < 0) continue;
        const int g = c & 1;
        std::vector<int>& out = *out_sorted[g];
        const double v = value[i];
        const auto& e = extra[g];
        while (next[g] < e.size() && e[next[g]].first < v) out.push_back(e[next[g]++].second);
        out.push_back(c >> 1);
      }
    }
    for (int g = 0; g < 2; ++g) {
      while (next[g] < extra[g].size()) out_sorted[g]->push_back(extra[g][next[g]++].second);
    }
  }
}

ParzenEstimatorOptions estimator_options(const TpeOptions& options, bool univariate) {
  ParzenEstimatorOptions pe;
  pe.consider_prior = options.consider_prior;
  pe.prior_weight = options.prior_weight;
  pe.consider_magic_clip = options.consider_magic_clip;
  pe.consider_endpoints = options.consider_endpoints;
  // Univariate estimators count the prior's centre among the neighbours (Optuna 3.1), which did
  // better on the sampler benchmark or tied (docs/samplers.md). Joint estimators leave it out.
  pe.prior_in_bandwidths = univariate;
  return pe;
}

// Of n_candidates points (n_dims values each) drawn from `below`, the one of the largest
// log l(x) - log g(x); the first on ties, NaN scores skipped.
std::vector<double> best_candidate(const ParzenEstimator& below, const ParzenEstimator& above,
                                   int n_candidates, size_t n_dims, Rng& rng) {
  const int m = n_candidates;
  std::vector<double> candidates = below.sample(rng, m);
  std::vector<double> lb = below.log_pdf(candidates, m);
  std::vector<double> la = above.log_pdf(candidates, m);
  int best = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < m; ++i) {
    double s = lb[static_cast<size_t>(i)] - la[static_cast<size_t>(i)];
    if (std::isnan(s)) continue;
    if (s > best_score) {
      best_score = s;
      best = i;
    }
  }
  return {candidates.begin() + static_cast<ptrdiff_t>(best) * static_cast<ptrdiff_t>(n_dims),
          candidates.begin() + static_cast<ptrdiff_t>(best + 1) * static_cast<ptrdiff_t>(n_dims)};
}

}  // namespace

// The below (0) and above (1) kernels of one sample_group() call.
struct TpeSampler::Kernels {
  GroupObservations group[2];
};

void TpeSampler::Split::derive(size_t n_trials) {
  if (derived) return;
  code.assign(n_trials, -1);
  running_index.assign(n_trials, -1);
  for (size_t r = 0; r < running.size(); ++r) {
    running_index[static_cast<size_t>(running[r])] = static_cast<int>(r);
  }
  for (size_t i = 0; i < n_trials; ++i) {
    if (role[i] == kNone) continue;
    const int g = role[i] == kBelow ? 0 : 1;
    std::vector<int>& m = members[g];
    code[i] = static_cast<int>(m.size()) * 2 + g;
    m.push_back(static_cast<int>(i));
  }
  derived = true;
}

std::vector<double> TpeSampler::sample_group(Call& call, const std::vector<std::string>& names,
                                             const std::vector<Distribution>& dims, bool univariate,
                                             Rng& rng) {
  Kernels kernels;
  std::unique_ptr<ParzenMemo> memos[2];  // below, above
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& memo : memos) {
      if (memos_.empty()) break;
      memo = std::move(memos_.back());
      memos_.pop_back();
    }
    if (!cache_ || cache_->generation != call.generation) {
      // Another study's history reset the cache meanwhile: start over from ours.
      call = begin_call(*call.view, TrialContext{call.number});
    }
    observe(call, names, dims, kernels);
  }
  const ParzenEstimatorOptions pe = estimator_options(options_, univariate);
  for (auto& memo : memos) {
    if (!memo) memo = std::make_unique<ParzenMemo>();
  }
  const GroupObservations& b = kernels.group[0];
  const GroupObservations& a = kernels.group[1];
  ParzenEstimator below(dims, b.columns, b.weights, pe, b.sorted, memos[0].get());
  ParzenEstimator above(dims, a.columns, a.weights, pe, a.sorted, memos[1].get());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Above first: the next call takes them back in the order below, above.
    memos_.push_back(std::move(memos[1]));
    memos_.push_back(std::move(memos[0]));
  }
  return best_candidate(below, above, options_.n_ei_candidates, dims.size(), rng);
}

void TpeSampler::observe(const Call& call, const std::vector<std::string>& names,
                         const std::vector<Distribution>& dims, Kernels& kernels) {
  const size_t n_dims = dims.size();
  const View& view = *call.view;
  std::vector<Column*> cols(n_dims);
  for (size_t d = 0; d < n_dims; ++d) cols[d] = &cache_->column(names[d], dims[d], view);
  std::vector<const FrozenTrial*> running_trials;
  for (int i : call.running) running_trials.push_back(&view[static_cast<size_t>(i)]);
  const RunningValues running = running_values(running_trials, names, dims);
  const size_t n = call.role.size();
  auto& groups = kernels.group;  // below, above
  // Fast path: no parameter leaves a trial with a role out (the usual case), so the kernels,
  // their ranks and the default weights are the split's, shared by the calls of one trial.
  if (call.split != nullptr && running.all_ok()) {
    Split& sp = *call.split;
    sp.derive(n);
    if (gather_columns(sp.members, sp.code, sp.running, cols, running.values, groups)) {
      split_weights(sp, kernels);
      // Every kernel has a value in every dimension: each order holds all of its group's.
      for (int g = 0; g < 2; ++g) {
        groups[g].sorted.assign(n_dims, std::vector<int>(sp.members[g].size()));
      }
      sort_kernels(sp.code, sp.running, running.values, cols, n, /*presized=*/true, groups);
      return;
    }
  }
  const FilteredKernels f = filter_kernels(call.role, call.running, running.ok, cols, n);
  gather_filtered_columns(f, cols, running.values, groups);
  for (int g = 0; g < 2; ++g) {
    const std::vector<int>& m = f.members[g];
    groups[g].weights = checked_weights(options_, static_cast<int>(m.size()));
    if (g == 0) {
      std::vector<double> improvement = below_weights(m, call.role);
      if (!improvement.empty()) groups[g].weights = std::move(improvement);
    }
    groups[g].sorted.assign(n_dims, {});
    for (auto& order : groups[g].sorted) order.reserve(m.size());
  }
  sort_kernels(f.code, call.running, running.values, cols, n, /*presized=*/false, groups);
}

void TpeSampler::split_weights(Split& sp, Kernels& kernels) {
  auto& groups = kernels.group;  // below, above
  if (!options_.weights) {
    if (!sp.weights_ready) {
      for (int g = 0; g < 2; ++g) {
        sp.weights[g] = checked_weights(options_, static_cast<int>(sp.members[g].size()));
      }
      sp.weights_ready = true;
    }
    for (int g = 0; g < 2; ++g) groups[g].weights = sp.weights[g];
  } else {
    for (int g = 0; g < 2; ++g) {
      groups[g].weights = checked_weights(options_, static_cast<int>(sp.members[g].size()));
    }
  }
  if (!sp.improvement_ready) {
    sp.improvement = below_weights(sp.members[0], sp.role);
    sp.improvement_ready = true;
  }
  if (!sp.improvement.empty()) groups[0].weights = sp.improvement;
}

std::vector<double> TpeSampler::below_weights(const std::vector<int>& below,
                                              const std::vector<uint8_t>& role) const {
  if (cache_->n_objectives > 1) {
    // Several objectives: uniform, or by hypervolume contribution among the feasible COMPLETE
    // trials (the others, PRUNED or infeasible, barely weigh).
    if (!options_.hypervolume_weights) return std::vector<double>(below.size(), 1.0);
    const size_t m = cache_->n_objectives;
    std::vector<size_t> scored;
    std::vector<double> losses;
    for (size_t j = 0; j < below.size(); ++j) {
      const size_t i = static_cast<size_t>(below[j]);
      if (i * m >= cache_->losses.size() || std::isnan(cache_->losses[i * m])) continue;
      scored.push_back(j);
      losses.insert(losses.end(), cache_->losses.begin() + static_cast<ptrdiff_t>(i * m),
                    cache_->losses.begin() + static_cast<ptrdiff_t>((i + 1) * m));
    }
    std::vector<double> w(below.size(), kHypervolumeWeightFloor);
    const std::vector<double> by_volume = tpe_hypervolume_weights(losses, m);
    for (size_t j = 0; j < scored.size(); ++j) w[scored[j]] = by_volume[j];
    return w;
  }
  if (!options_.improvement_weights) return {};
  return below_improvement_weights(below, role);
}

std::vector<double> TpeSampler::below_improvement_weights(const std::vector<int>& below,
                                                          const std::vector<uint8_t>& role) const {
  // The threshold: the best COMPLETE trial above (cache_->complete is best first).
  const double* threshold = nullptr;
  for (int number : cache_->complete) {
    if (role[static_cast<size_t>(number)] == kAbove) {
      threshold = &cache_->score[static_cast<size_t>(number)];
      break;
    }
  }
  if (!threshold) return {};
  std::vector<double> losses(below.size());
  for (size_t j = 0; j < below.size(); ++j) {
    const size_t i = static_cast<size_t>(below[j]);
    // A PRUNED trial's loss is an intermediate value, an infeasible one's is not ranked by its
    // value: neither is comparable with the threshold.
    if (!std::isnan(cache_->step[i]) || cache_->violation[i] > 0) return {};
    losses[j] = cache_->score[i];
  }
  return tpe_improvement_weights(losses, *threshold);
}

ParamValue TpeSampler::sample_one(Call& call, const std::string& name,
                                  const Distribution& distribution, Rng& rng) {
  if (call.n_finished < options_.n_startup_trials || is_single(distribution)) {
    return RandomSampler::draw(distribution, rng);
  }
  std::vector<double> x = sample_group(call, {name}, {distribution}, /*univariate=*/true, rng);
  return from_internal(distribution, x[0]);
}

ParamValue TpeSampler::sample_independent(const std::string& name, const Distribution& distribution,
                                          const History& history, const TrialContext& trial,
                                          Rng& rng) {
  const View view(history);
  Call call;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    call = begin_call(view, TrialContext{view.position(trial.number)});
  }
  return sample_one(call, name, distribution, rng);
}

Params TpeSampler::sample(const SearchSpace& space, const History& history,
                          const TrialContext& trial, Rng& rng) {
  const View view(history);
  Call call;
  std::vector<NamedDistributions> joint_sets;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    call = begin_call(view, TrialContext{view.position(trial.number)});
    if (joint(history) && call.n_finished >= options_.n_startup_trials) {
      // The joint sets, restricted to the parameters of `space` with the same distribution.
      auto restrict = [&](const NamedDistributions& set) {
        NamedDistributions out;
        for (const auto& [name, dist] : set) {
          const ParamSpec* spec = space.find(name);
          if (spec && spec->distribution == dist && !is_single(dist)) out.emplace_back(name, dist);
        }
        return out;
      };
      if (options_.group) {
        for (const auto& g : cache_->groups) joint_sets.push_back(restrict(g));
      } else if (cache_->intersection) {
        joint_sets.push_back(restrict(*cache_->intersection));
      }
    }
  }
  // A deterministic objective's point is not proposed twice: a proposal that repeats the
  // parameters of a trial evaluated or running (not FAIL) is drawn again, at most 7 times more,
  // then at random (at most 64 times; a space nearly exhausted). The warm start's points are not
  // this study's: they may be proposed.
  auto taken = [&](const Params& params) {
    if (history.noisy) return false;
    for (const FrozenTrial& t : history.trials) {
      if (t.state != TrialState::kFail && t.number != trial.number && t.params == params) {
        return true;
      }
    }
    return false;
  };
  Params params;
  for (int attempt = 0; attempt < 8; ++attempt) {
    Params joint;
    for (const auto& set : joint_sets) {
      if (set.empty()) continue;
      std::vector<std::string> names;
      std::vector<Distribution> dims;
      for (const auto& [name, dist] : set) {
        names.push_back(name);
        dims.push_back(dist);
      }
      std::vector<double> x = sample_group(call, names, dims, /*univariate=*/false, rng);
      for (size_t d = 0; d < names.size(); ++d) {
        joint.emplace(names[d], from_internal(dims[d], x[d]));
      }
    }
    params.clear();
    for (const auto& spec : space.params()) {
      if (!space.is_active(spec, params)) continue;
      auto it = joint.find(spec.name);
      params.emplace(spec.name, it != joint.end()
                                    ? it->second
                                    : sample_one(call, spec.name, spec.distribution, rng));
    }
    if (!taken(params)) return params;
  }
  RandomSampler random;
  for (int attempt = 0; attempt < 64; ++attempt) {
    Params drawn = random.sample(space, history, trial, rng);
    if (!taken(drawn)) return drawn;
  }
  return params;
}

SearchSpace TpeSampler::relative_space(const History& history) {
  SearchSpace space;
  if (!joint(history)) return space;
  const View view(history);
  std::lock_guard<std::mutex> lock(mutex_);
  sync(view);
  auto add = [&](const NamedDistributions& set) {
    for (const auto& [name, dist] : set) {
      if (!is_single(dist)) space.add(ParamSpec{name, dist, std::nullopt, false});
    }
  };
  if (options_.group) {
    for (const auto& g : cache_->groups) add(g);
  } else if (cache_->intersection) {
    add(*cache_->intersection);
  }
  return space;
}

}  // namespace tuner
