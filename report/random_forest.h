// RandomForest: a regression forest of fully grown trees, the model fANOVA decomposes.
//
// As scikit-learn's RandomForestRegressor with the settings Optuna's FanovaImportanceEvaluator
// uses: each tree is fit on a bootstrap sample, every feature is considered at every split, the
// split minimizes the squared error, and a node is split until it is pure, holds one sample,
// or reaches max_depth. Two kinds of features:
// - numeric: a split sends x <= threshold left; thresholds are midpoints between sample values;
// - categorical (values 0, 1, ..., n-1 as doubles): a split sends x == category left and every
//   other category right, which is what a tree on a one-hot encoding can express.
//
// Deterministic: the same data, options and seed give the same forest on any compiler.
// Thread safety: a fitted forest is immutable; fit() touches nothing shared.
#ifndef TUNER_REPORT_RANDOM_FOREST_H_
#define TUNER_REPORT_RANDOM_FOREST_H_

#include <cstdint>
#include <vector>

namespace tuner::report {

struct TreeNode {
  int feature = -1;        // -1: a leaf
  double threshold = 0.0;  // numeric: x <= threshold goes left; categorical: x == threshold
  int left = -1;           // child indices in Tree::nodes
  int right = -1;
  double value = 0.0;  // mean target of the node's samples (the prediction at a leaf)
};

struct Tree {
  std::vector<TreeNode> nodes;  // nodes[0] is the root
};

struct ForestOptions {
  int n_trees = 64;    // >= 1. Default 64, as Optuna.
  int max_depth = 64;  // >= 1. Default 64, as Optuna.
  uint64_t seed = 0;   // seeds the bootstrap samples
};

// x: n_samples rows of n_features values; y: n_samples targets; categorical[j]: feature j is
// categorical. REQUIRES: n_samples >= 1, every row has categorical.size() values.
std::vector<Tree> fit_forest(const std::vector<std::vector<double>>& x,
                             const std::vector<double>& y, const std::vector<bool>& categorical,
                             const ForestOptions& options);

// The tree's prediction for one row.
double predict(const Tree& tree, const std::vector<double>& row,
               const std::vector<bool>& categorical);

}  // namespace tuner::report

#endif  // TUNER_REPORT_RANDOM_FOREST_H_
