#include "report/random_forest.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "search/rng.h"

namespace tuner::report {

namespace {

struct Split {
  int feature = -1;
  double threshold = 0.0;
  double score = 0.0;  // sum_l^2 / n_l + sum_r^2 / n_r: larger is a smaller squared error
};

// Grows one tree on a bootstrap sample. Each feature keeps the sample's positions in its own
// order (sorted by value for numeric features); a node is the same range [begin, end) of every
// order, and a split partitions each range stably, so no node sorts again.
class TreeBuilder {
 public:
  TreeBuilder(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
              const std::vector<bool>& categorical, int max_depth)
      : x_(x), y_(y), categorical_(categorical), max_depth_(max_depth) {
    n_categories_.assign(categorical.size(), 0);
    for (size_t j = 0; j < categorical.size(); ++j) {
      if (!categorical[j]) continue;
      for (const auto& row : x) {
        n_categories_[j] = std::max(n_categories_[j], static_cast<size_t>(row[j]) + 1);
      }
    }
  }

  // rows: the bootstrap sample (row indices, repeats allowed).
  Tree build(std::vector<int> rows) {
    rows_ = std::move(rows);
    const size_t m = rows_.size();
    order_.assign(categorical_.size(), {});
    for (size_t j = 0; j < categorical_.size(); ++j) {
      auto& order = order_[j];
      order.resize(m);
      for (size_t i = 0; i < m; ++i) order[i] = static_cast<int>(i);
      if (categorical_[j]) continue;
      std::sort(order.begin(), order.end(), [&](int a, int b) {
        double va = value(a, j), vb = value(b, j);
        return va != vb ? va < vb : a < b;
      });
    }
    goes_left_.assign(m, 0);
    tree_ = Tree{};
    grow(0, m, 0);
    return std::move(tree_);
  }

 private:
  double value(int position, size_t j) const { return x_[rows_[position]][j]; }
  double target(int position) const { return y_[rows_[position]]; }

  int grow(size_t begin, size_t end, int depth) {
    int id = static_cast<int>(tree_.nodes.size());
    tree_.nodes.emplace_back();
    const auto& positions = order_[0];
    double sum = 0.0, lo = target(positions[begin]), hi = lo;
    for (size_t i = begin; i < end; ++i) {
      double t = target(positions[i]);
      sum += t;
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    const auto n = static_cast<double>(end - begin);
    tree_.nodes[id].value = sum / n;
    // Pure within rounding: splitting further would only fit noise of the last bits.
    bool pure = hi - lo <= 1e-12 * std::max(1.0, std::max(std::abs(lo), std::abs(hi)));
    if (end - begin < 2 || depth >= max_depth_ || pure) return id;

    Split best;
    best.score = sum * sum / n * (1.0 + 1e-12) + 1e-300;  // a split must beat the parent
    for (size_t j = 0; j < categorical_.size(); ++j) {
      if (categorical_[j]) {
        best_categorical(begin, end, j, sum, best);
      } else {
        best_numeric(begin, end, j, sum, best);
      }
    }
    if (best.feature < 0) return id;

    size_t n_left = 0;
    for (size_t i = begin; i < end; ++i) {
      int p = positions[i];
      double v = value(p, static_cast<size_t>(best.feature));
      bool left = categorical_[best.feature] ? v == best.threshold : v <= best.threshold;
      goes_left_[p] = left;
      n_left += left;
    }
    for (auto& order : order_) {
      std::stable_partition(order.begin() + static_cast<std::ptrdiff_t>(begin),
                            order.begin() + static_cast<std::ptrdiff_t>(end),
                            [&](int p) { return goes_left_[p] != 0; });
    }
    tree_.nodes[id].feature = best.feature;
    tree_.nodes[id].threshold = best.threshold;
    int l = grow(begin, begin + n_left, depth + 1);
    int r = grow(begin + n_left, end, depth + 1);
    tree_.nodes[id].left = l;
    tree_.nodes[id].right = r;
    return id;
  }

  void best_numeric(size_t begin, size_t end, size_t j, double total, Split& best) const {
    const auto& order = order_[j];
    double left_sum = 0.0;
    const size_t n = end - begin;
    for (size_t i = 0; i + 1 < n; ++i) {
      left_sum += target(order[begin + i]);
      double v = value(order[begin + i], j), next = value(order[begin + i + 1], j);
      if (v == next) continue;
      auto nl = static_cast<double>(i + 1), nr = static_cast<double>(n - i - 1);
      double right_sum = total - left_sum;
      double score = left_sum * left_sum / nl + right_sum * right_sum / nr;
      if (score > best.score) best = {static_cast<int>(j), v + (next - v) / 2.0, score};
    }
  }

  void best_categorical(size_t begin, size_t end, size_t j, double total, Split& best) {
    sums_.assign(n_categories_[j], 0.0);
    counts_.assign(n_categories_[j], 0);
    for (size_t i = begin; i < end; ++i) {
      int p = order_[j][i];
      auto c = static_cast<size_t>(value(p, j));
      sums_[c] += target(p);
      ++counts_[c];
    }
    const auto n = static_cast<double>(end - begin);
    for (size_t c = 0; c < sums_.size(); ++c) {
      if (counts_[c] == 0 || counts_[c] == end - begin) continue;
      auto nl = static_cast<double>(counts_[c]);
      double right_sum = total - sums_[c];
      double score = sums_[c] * sums_[c] / nl + right_sum * right_sum / (n - nl);
      if (score > best.score) best = {static_cast<int>(j), static_cast<double>(c), score};
    }
  }

  // Constant after construction.
  const std::vector<std::vector<double>>& x_;
  const std::vector<double>& y_;
  const std::vector<bool>& categorical_;
  const int max_depth_;
  std::vector<size_t> n_categories_;

  // State of the tree being grown.
  Tree tree_;
  std::vector<int> rows_;                // position -> row of x_
  std::vector<std::vector<int>> order_;  // per feature: positions, in that feature's order
  std::vector<char> goes_left_;          // per position, for the split being applied
  std::vector<double> sums_;
  std::vector<size_t> counts_;
};

}  // namespace

std::vector<Tree> fit_forest(const std::vector<std::vector<double>>& x,
                             const std::vector<double>& y, const std::vector<bool>& categorical,
                             const ForestOptions& options) {
  TreeBuilder builder(x, y, categorical, options.max_depth);
  Rng rng(options.seed);
  const auto n = static_cast<int64_t>(x.size());
  std::vector<Tree> forest;
  forest.reserve(static_cast<size_t>(options.n_trees));
  for (int t = 0; t < options.n_trees; ++t) {
    std::vector<int> sample(static_cast<size_t>(n));
    for (auto& s : sample) s = static_cast<int>(rng.integer(0, n - 1));
    forest.push_back(builder.build(std::move(sample)));
  }
  return forest;
}

double predict(const Tree& tree, const std::vector<double>& row,
               const std::vector<bool>& categorical) {
  int id = 0;
  while (tree.nodes[id].feature >= 0) {
    const TreeNode& node = tree.nodes[id];
    double v = row[node.feature];
    bool left = categorical[node.feature] ? v == node.threshold : v <= node.threshold;
    id = left ? node.left : node.right;
  }
  return tree.nodes[id].value;
}

}  // namespace tuner::report
