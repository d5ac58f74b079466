// Parameter importances: how much of the objective's variation each parameter explains.
//
// fANOVA (Hutter et al., ICML 2014), as Optuna's default FanovaImportanceEvaluator computes it:
// a random forest (report/random_forest.h) is fit on the COMPLETE trials (parameters -> the
// chosen objective); for each tree, the importance of a parameter is the variance of the tree's
// prediction marginalized over every other parameter, divided by the total variance of the
// tree's prediction, both over the whole search space; the forest's importance is the mean over
// its trees, and the importances are normalized to sum to 1.
//
// The space each parameter spans:
// - float and int parameters: their distribution's bounds, on the log scale for log
//   distributions; normal ones (unbounded): the range of the values observed;
// - categorical parameters: each choice with equal weight;
// - conditional parameters (absent from some trials): "inactive" is one more value, weighted by
//   the share of trials in which the parameter is absent, so a parameter that matters only by
//   being set or not still scores.
//
// Deterministic: the same trials and options give the same importances.
// Thread safety: a pure function.
#ifndef TUNER_REPORT_IMPORTANCE_H_
#define TUNER_REPORT_IMPORTANCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trials/frozen_trial.h"

namespace tuner::report {

struct ImportanceOptions {
  int n_trees = 64;    // >= 1. Default 64, as Optuna.
  int max_depth = 64;  // >= 1. Default 64, as Optuna.
  uint64_t seed = 0;   // seeds the forest's bootstrap samples
  // The forest is fit on at most this many COMPLETE trials (the cost grows about as n log^2 n
  // per tree): above it, every k-th of them in number order. >= 2. Default 2,000.
  int max_trials = 2000;
};

struct ParamImportance {
  std::string name;
  double importance = 0.0;  // in [0, 1]
};

struct Importances {
  // Every parameter any COMPLETE trial has, most important first (ties by name). Sums to 1
  // when not empty.
  std::vector<ParamImportance> params;
  int n_trials = 0;  // the COMPLETE trials the forest was fit on
  // True when nothing could be attributed (fewer than 2 COMPLETE trials, a constant objective,
  // or only interactions): every parameter then gets an equal share, which means nothing.
  bool degenerate = false;
};

// Importances for objective `objective` (an index into FrozenTrial::values) of the COMPLETE
// trials among `trials`; other trials are ignored.
Importances compute_importances(const std::vector<FrozenTrial>& trials, size_t objective,
                                const ImportanceOptions& options = {});

}  // namespace tuner::report

#endif  // TUNER_REPORT_IMPORTANCE_H_
