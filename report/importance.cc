#include "report/importance.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <variant>

#include "report/random_forest.h"
#include "trials/overloaded.h"

namespace tuner::report {

namespace {

// Numeric features are scaled to [0, 1]; an inactive (absent) parameter is encoded below that
// range, so one split separates it from every active value.
constexpr double kInactive = -1.0;
// The numeric axis runs over (kAxisLow, 1]: it holds kInactive and [0, 1].
constexpr double kAxisLow = -2.0;

// One parameter as a feature of the forest, with the measure fANOVA integrates over.
struct Feature {
  std::string name;
  bool categorical = false;
  double inactive_mass = 0.0;  // share of trials without the parameter
  // Numeric: the range of the (log-)value before scaling.
  bool log = false;
  double low = 0.0, high = 0.0;
  // Categorical: the choices by their readable form; index choices.size() is "inactive" when
  // inactive_mass > 0. category_mass holds the weight of each index.
  std::map<std::string, int> choice_index;
  std::vector<double> category_mass;

  // Numeric: the measure of (kAxisLow, x].
  double measure_upto(double x) const {
    double active = std::clamp(x, 0.0, 1.0) * (1.0 - inactive_mass);
    return (x >= kInactive ? inactive_mass : 0.0) + active;
  }
};

double transform(const Feature& f, const ParamValue& v) {
  double d = as_double(v);
  return f.log ? std::log(d) : d;
}

std::vector<Feature> describe_features(const std::vector<const FrozenTrial*>& trials) {
  std::map<std::string, Feature> by_name;
  std::map<std::string, int> present;
  for (const FrozenTrial* t : trials) {
    for (const auto& [name, value] : t->params) {
      Feature& f = by_name[name];
      f.name = name;
      ++present[name];
      auto dist = t->distributions.find(name);
      bool categorical = std::holds_alternative<std::string>(value) ||
                         (dist != t->distributions.end() &&
                          std::holds_alternative<CategoricalDistribution>(dist->second));
      f.categorical = f.categorical || categorical;
      if (dist == t->distributions.end()) continue;
      std::visit(Overloaded{
                     [&](const FloatDistribution& d) { f.log = f.log || d.log; },
                     [&](const IntDistribution& d) { f.log = f.log || d.log; },
                     [&](const NormalDistribution& d) { f.log = f.log || d.log; },
                     [&](const CategoricalDistribution& d) {
                       for (const ParamValue& c : d.choices) {
                         f.choice_index.emplace(to_string(c), 0);
                       }
                     },
                 },
                 dist->second);
    }
  }
  // Bounds: the distributions' and every observed value (a study's space may have changed).
  for (auto& [name, f] : by_name) {
    if (f.categorical) continue;
    bool first = true;
    auto widen = [&](double v) {
      if (!std::isfinite(v)) return;
      f.low = first ? v : std::min(f.low, v);
      f.high = first ? v : std::max(f.high, v);
      first = false;
    };
    for (const FrozenTrial* t : trials) {
      auto p = t->params.find(name);
      if (p == t->params.end() || std::holds_alternative<std::string>(p->second)) continue;
      widen(transform(f, p->second));
      auto dist = t->distributions.find(name);
      if (dist == t->distributions.end()) continue;
      if (const auto* d = std::get_if<FloatDistribution>(&dist->second)) {
        widen(f.log ? std::log(d->low) : d->low);
        widen(f.log ? std::log(d->high) : d->high);
      } else if (const auto* i = std::get_if<IntDistribution>(&dist->second)) {
        auto lo = static_cast<double>(i->low), hi = static_cast<double>(i->high);
        widen(f.log ? std::log(lo) : lo);
        widen(f.log ? std::log(hi) : hi);
      }
    }
  }
  std::vector<Feature> features;
  const auto n = static_cast<double>(trials.size());
  for (auto& [name, f] : by_name) {
    f.inactive_mass = (n - present[name]) / n;
    if (f.categorical) {
      for (const FrozenTrial* t : trials) {
        auto p = t->params.find(name);
        if (p != t->params.end()) f.choice_index.emplace(to_string(p->second), 0);
      }
      int index = 0;
      for (auto& [text, i] : f.choice_index) i = index++;
      auto k = static_cast<double>(f.choice_index.size());
      f.category_mass.assign(f.choice_index.size(), (1.0 - f.inactive_mass) / k);
      if (f.inactive_mass > 0) f.category_mass.push_back(f.inactive_mass);
    }
    features.push_back(std::move(f));
  }
  return features;
}

double encode(const Feature& f, const FrozenTrial& t) {
  auto p = t.params.find(f.name);
  if (f.categorical) {
    if (p == t.params.end()) return static_cast<double>(f.choice_index.size());
    return f.choice_index.at(to_string(p->second));
  }
  if (p == t.params.end()) return kInactive;
  if (f.high <= f.low) return 0.0;
  return std::clamp((transform(f, p->second) - f.low) / (f.high - f.low), 0.0, 1.0);
}

// The variance decomposition of one tree over the product measure the features describe.
// Region state along a path: numeric features keep their interval (low_, high_], categorical
// ones the mass of the categories still possible (mass_).
class TreeDecomposition {
 public:
  TreeDecomposition(const Tree& tree, const std::vector<Feature>& features)
      : tree_(tree), features_(features) {}

  // The mean and variance of the tree's prediction over the whole space.
  std::pair<double, double> total() {
    reset();
    sum_ = sum_sq_ = 0.0;
    walk_total(0, 1.0);
    return {sum_, std::max(0.0, sum_sq_ - sum_ * sum_)};
  }

  // The variance of the prediction marginalized over every feature but `p`.
  double marginal_variance(int p, double mean) {
    reset();
    p_ = p;
    const Feature& f = features_[p];
    if (f.categorical) {
      cell_mass_ = f.category_mass;
      allowed_.assign(cell_mass_.size(), 1);
      only_ = -1;
    } else {
      edges_ = {kAxisLow, 1.0};
      for (const TreeNode& node : tree_.nodes) {
        if (node.feature == p) edges_.push_back(node.threshold);
      }
      std::sort(edges_.begin(), edges_.end());
      edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
      cell_mass_.assign(edges_.size() - 1, 0.0);
      for (size_t k = 0; k + 1 < edges_.size(); ++k) {
        cell_mass_[k] = f.measure_upto(edges_[k + 1]) - f.measure_upto(edges_[k]);
      }
    }
    cells_.assign(cell_mass_.size() + 1, 0.0);
    walk_marginal(0, 1.0);
    if (!f.categorical) {  // cells_ holds differences: accumulate them
      for (size_t k = 1; k < cells_.size(); ++k) cells_[k] += cells_[k - 1];
    }
    double variance = 0.0;
    for (size_t k = 0; k < cell_mass_.size(); ++k) {
      variance += cell_mass_[k] * (cells_[k] - mean) * (cells_[k] - mean);
    }
    return variance;
  }

 private:
  void reset() {
    low_.assign(features_.size(), kAxisLow);
    high_.assign(features_.size(), 1.0);
    mass_.assign(features_.size(), 1.0);
  }

  // The shares of the current region on feature j that go left and right at `node`.
  std::pair<double, double> shares(const TreeNode& node) const {
    const int j = node.feature;
    const Feature& f = features_[j];
    double whole, left;
    if (f.categorical) {
      whole = mass_[j];
      left = f.category_mass[static_cast<size_t>(node.threshold)];
    } else {
      double t = std::clamp(node.threshold, low_[j], high_[j]);
      whole = f.measure_upto(high_[j]) - f.measure_upto(low_[j]);
      left = f.measure_upto(t) - f.measure_upto(low_[j]);
    }
    if (whole <= 0.0) return {0.0, 0.0};
    left = std::clamp(left / whole, 0.0, 1.0);
    return {left, 1.0 - left};
  }

  // Calls visit(child, share) for both children with the region narrowed accordingly.
  template <typename Visit>
  void descend(const TreeNode& node, Visit&& visit) {
    const int j = node.feature;
    auto [left_share, right_share] = shares(node);
    if (features_[j].categorical) {
      double saved = mass_[j];
      double m = features_[j].category_mass[static_cast<size_t>(node.threshold)];
      mass_[j] = m;
      visit(node.left, left_share, true);
      mass_[j] = saved - m;
      visit(node.right, right_share, false);
      mass_[j] = saved;
    } else {
      double saved_low = low_[j], saved_high = high_[j];
      high_[j] = std::clamp(node.threshold, saved_low, saved_high);
      visit(node.left, left_share, true);
      high_[j] = saved_high;
      low_[j] = std::clamp(node.threshold, saved_low, saved_high);
      visit(node.right, right_share, false);
      low_[j] = saved_low;
    }
  }

  void walk_total(int id, double weight) {
    const TreeNode& node = tree_.nodes[id];
    if (node.feature < 0) {
      sum_ += weight * node.value;
      sum_sq_ += weight * node.value * node.value;
      return;
    }
    descend(node, [&](int child, double share, bool) {
      if (weight * share > 0.0) walk_total(child, weight * share);
    });
  }

  // `weight`: the measure of the region on every feature but p_.
  void walk_marginal(int id, double weight) {
    const TreeNode& node = tree_.nodes[id];
    if (node.feature < 0) {
      add_leaf(node.value * weight);
      return;
    }
    if (node.feature != p_) {
      descend(node, [&](int child, double share, bool) {
        if (weight * share > 0.0) walk_marginal(child, weight * share);
      });
      return;
    }
    if (!features_[p_].categorical) {
      descend(node, [&](int child, double, bool) { walk_marginal(child, weight); });
      return;
    }
    auto c = static_cast<size_t>(node.threshold);
    int saved_only = only_;
    only_ = static_cast<int>(c);
    walk_marginal(node.left, weight);
    only_ = saved_only;
    char saved_allowed = allowed_[c];
    allowed_[c] = 0;
    walk_marginal(node.right, weight);
    allowed_[c] = saved_allowed;
  }

  void add_leaf(double contribution) {
    if (features_[p_].categorical) {
      if (only_ >= 0) {
        if (allowed_[only_]) cells_[only_] += contribution;
        return;
      }
      for (size_t k = 0; k < allowed_.size(); ++k) {
        if (allowed_[k]) cells_[k] += contribution;
      }
      return;
    }
    auto index = [&](double edge) {
      return static_cast<size_t>(std::lower_bound(edges_.begin(), edges_.end(), edge) -
                                 edges_.begin());
    };
    cells_[index(low_[p_])] += contribution;
    cells_[index(high_[p_])] -= contribution;
  }

  // Constant after construction.
  const Tree& tree_;
  const std::vector<Feature>& features_;

  // Traversal state.
  std::vector<double> low_, high_, mass_;
  double sum_ = 0.0, sum_sq_ = 0.0;
  int p_ = -1;
  std::vector<double> edges_;      // numeric p_: cell k is (edges_[k], edges_[k + 1]]
  std::vector<double> cell_mass_;  // per cell (numeric) or category (categorical)
  std::vector<double> cells_;      // the marginal prediction per cell
  std::vector<char> allowed_;      // categorical p_: categories still possible
  int only_ = -1;                  // categorical p_: the one category left, or -1
};

Importances equal_shares(const std::vector<Feature>& features, int n_trials) {
  Importances out;
  out.n_trials = n_trials;
  out.degenerate = true;
  for (const Feature& f : features) {
    out.params.push_back({f.name, 1.0 / static_cast<double>(features.size())});
  }
  return out;
}

}  // namespace

Importances compute_importances(const std::vector<FrozenTrial>& trials, size_t objective,
                                const ImportanceOptions& options) {
  std::vector<const FrozenTrial*> complete;
  for (const FrozenTrial& t : trials) {
    if (t.state == TrialState::kComplete && t.values.size() > objective &&
        std::isfinite(t.values[objective])) {
      complete.push_back(&t);
    }
  }
  const auto limit = static_cast<size_t>(std::max(2, options.max_trials));
  if (complete.size() > limit) {
    std::vector<const FrozenTrial*> spread;
    spread.reserve(limit);
    for (size_t i = 0; i < limit; ++i) spread.push_back(complete[i * complete.size() / limit]);
    complete = std::move(spread);
  }
  const int n = static_cast<int>(complete.size());
  std::vector<Feature> features = describe_features(complete);
  if (features.empty()) return Importances{{}, n, n < 2};
  if (n < 2) return equal_shares(features, n);

  std::vector<std::vector<double>> x(complete.size(), std::vector<double>(features.size()));
  std::vector<double> y(complete.size());
  std::vector<bool> categorical(features.size());
  for (size_t j = 0; j < features.size(); ++j) categorical[j] = features[j].categorical;
  for (size_t i = 0; i < complete.size(); ++i) {
    for (size_t j = 0; j < features.size(); ++j) x[i][j] = encode(features[j], *complete[i]);
    y[i] = complete[i]->values[objective];
  }

  ForestOptions forest_options{options.n_trees, options.max_depth, options.seed};
  std::vector<Tree> forest = fit_forest(x, y, categorical, forest_options);
  std::vector<double> share(features.size(), 0.0);
  int counted = 0;
  for (const Tree& tree : forest) {
    TreeDecomposition d(tree, features);
    auto [mean, variance] = d.total();
    // Relative threshold: a variance at rounding level is a constant tree.
    if (!(variance > 1e-24 * std::max(1.0, mean * mean))) continue;
    ++counted;
    for (size_t j = 0; j < features.size(); ++j) {
      share[j] += std::min(1.0, d.marginal_variance(static_cast<int>(j), mean) / variance);
    }
  }
  double sum = 0.0;
  for (double s : share) sum += s;
  if (counted == 0 || !(sum > 0.0)) return equal_shares(features, n);

  Importances out;
  out.n_trials = n;
  for (size_t j = 0; j < features.size(); ++j) {
    out.params.push_back({features[j].name, share[j] / sum});
  }
  std::stable_sort(out.params.begin(), out.params.end(),
                   [](const ParamImportance& a, const ParamImportance& b) {
                     return a.importance > b.importance;
                   });
  return out;
}

}  // namespace tuner::report
