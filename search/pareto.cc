#include "search/pareto.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <tuple>
#include <utility>

#include "trials/constraints.h"

namespace tuner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

size_t count(std::span<const double> points, size_t m) { return points.size() / m; }

// The points' indices, sorted lexicographically by their values (ties by index). In this order
// a point comes after every point that dominates it.
std::vector<size_t> lex_order(std::span<const double> points, size_t m) {
  // Sorted with each point's first objective beside its index: most comparisons end there
  // without reading the point's row.
  const size_t n = count(points, m);
  std::vector<std::pair<double, size_t>> keyed(n);
  for (size_t i = 0; i < n; ++i) keyed[i] = {points[i * m], i};
  std::sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    const double* x = points.data() + a.second * m;
    const double* y = points.data() + b.second * m;
    for (size_t k = 1; k < m; ++k) {
      if (x[k] != y[k]) return x[k] < y[k];
    }
    return a.second < b.second;
  });
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = keyed[i].second;
  return order;
}

bool equal(const double* a, const double* b, size_t m) { return std::equal(a, a + m, b); }

// One front of three objectives, seen by the points that come after its members in lex_order()
// (so no worse in the first objective than any member): the staircase of the members' last two
// objectives, each step with the smallest first objective that reached it.
class Staircase {
 public:
  // True when a member dominates p. REQUIRES: every member's first objective <= p[0].
  bool dominates(const double* p) const {
    auto it = std::upper_bound(steps_.begin(), steps_.end(), p[1],
                               [](double v, const Step& s) { return v < s.second; });
    if (it == steps_.begin()) return false;
    --it;  // the smallest third objective among the members with second <= p[1]
    if (it->third != p[2]) return it->third < p[2];
    return it->second < p[1] || it->first < p[0];  // equal projections: a smaller first dominates
  }

  // REQUIRES: !dominates(p), and p comes after the members in lex_order().
  void insert(const double* p) {
    auto it = std::lower_bound(steps_.begin(), steps_.end(), p[1],
                               [](const Step& s, double v) { return s.second < v; });
    if (it != steps_.end() && it->second == p[1] && it->third == p[2]) return;  // equal
    // The steps p covers follow one another from `it`: replace them with p.
    auto covered_end = it;
    while (covered_end != steps_.end() && covered_end->third >= p[2]) ++covered_end;
    const Step step{p[1], p[2], p[0]};
    if (covered_end == it) {
      steps_.insert(it, step);
    } else {
      *it = step;
      steps_.erase(it + 1, covered_end);
    }
  }

 private:
  // A sorted vector, not a tree: the fronts the rankings build are mostly small, where moving a
  // few steps costs less than a tree's nodes.
  struct Step {
    double second, third, first;
  };
  std::vector<Step> steps_;  // second ascending, third descending
};

// Which points some other point dominates, for four objectives or more: a static k-d tree over
// all the points, each node with the least value of each objective in its subtree. A subtree
// whose least values are not all <= p's holds nothing that dominates p, so a query visits the
// part of the tree below p: on a front of tens of thousands of points, a small part, where
// checking p against every earlier front member took tens of seconds.
class DominanceTree {
 public:
  DominanceTree(std::span<const double> points, size_t m)
      : points_(points), m_(m), order_(count(points, m)) {
    std::iota(order_.begin(), order_.end(), size_t{0});
    if (order_.empty()) return;
    nodes_.resize(1);
    build(0, 0, order_.size(), 0);
  }

  // True when a point other than i dominates point i.
  bool dominated(size_t i) const {
    if (nodes_.empty()) return false;
    const double* p = point(i);
    std::vector<size_t>& stack = stack_;
    stack.assign(1, 0);
    while (!stack.empty()) {
      const size_t index = stack.back();
      stack.pop_back();
      const double* low = lows_.data() + index * m_;
      bool reachable = true;
      for (size_t k = 0; k < m_ && reachable; ++k) reachable = low[k] <= p[k];
      if (!reachable) continue;
      const Node& node = nodes_[index];
      if (node.left == kLeaf) {
        for (size_t j = node.begin; j < node.end; ++j) {
          if (order_[j] != i && dominates(point(order_[j]), p, m_)) return true;
        }
      } else {
        stack.push_back(node.left + 1);  // the right child, larger on the split's objective
        stack.push_back(node.left);      // the left one first: likelier to hold a dominator
      }
    }
    return false;
  }

 private:
  static constexpr size_t kLeaf = std::numeric_limits<size_t>::max();
  static constexpr size_t kLeafSize = 16;
  struct Node {
    size_t begin = 0, end = 0;  // its points: order_[begin, end)
    size_t left = kLeaf;        // its children: nodes left and left + 1; kLeaf for a leaf
  };

  const double* point(size_t i) const { return points_.data() + i * m_; }

  // Makes nodes_[index] the node of order_[begin, end), split on objective `axis`.
  void build(size_t index, size_t begin, size_t end, size_t axis) {
    lows_.resize(nodes_.size() * m_, std::numeric_limits<double>::infinity());
    Node node{begin, end, kLeaf};
    if (end - begin <= kLeafSize) {
      for (size_t j = begin; j < end; ++j) {
        for (size_t k = 0; k < m_; ++k) {
          lows_[index * m_ + k] = std::min(lows_[index * m_ + k], point(order_[j])[k]);
        }
      }
    } else {
      const size_t mid = begin + (end - begin) / 2;
      std::nth_element(order_.begin() + static_cast<ptrdiff_t>(begin),
                       order_.begin() + static_cast<ptrdiff_t>(mid),
                       order_.begin() + static_cast<ptrdiff_t>(end),
                       [&](size_t x, size_t y) { return point(x)[axis] < point(y)[axis]; });
      node.left = nodes_.size();
      nodes_.resize(node.left + 2);
      build(node.left, begin, mid, (axis + 1) % m_);
      build(node.left + 1, mid, end, (axis + 1) % m_);
      for (size_t k = 0; k < m_; ++k) {
        lows_[index * m_ + k] =
            std::min(lows_[node.left * m_ + k], lows_[(node.left + 1) * m_ + k]);
      }
    }
    nodes_[index] = node;
  }

  std::span<const double> points_;
  size_t m_;
  std::vector<size_t> order_;
  std::vector<Node> nodes_;
  std::vector<double> lows_;           // [node][objective]: the least value in the node's subtree
  mutable std::vector<size_t> stack_;  // dominated()'s, kept between queries (not thread-safe)
};

std::vector<int> ranks_1(std::span<const double> points) {
  std::vector<double> unique(points.begin(), points.end());
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  std::vector<int> ranks(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    ranks[i] = static_cast<int>(std::lower_bound(unique.begin(), unique.end(), points[i]) -
                                unique.begin());
  }
  return ranks;
}

// ranks_2(), ranks_3() and ranks_n() keep at most `cap` fronts: a point behind all of them gets
// rank `cap` and joins none, so the ranks below `cap` are exact and the deeper fronts cost nothing.
std::vector<int> ranks_2(std::span<const double> points, int cap) {
  // Each front seen by the later points: its member of least second objective (first, second).
  std::vector<std::pair<double, double>> fronts;
  std::vector<int> ranks(count(points, 2));
  for (size_t i : lex_order(points, 2)) {
    const double a = points[2 * i], b = points[2 * i + 1];
    auto k = std::partition_point(fronts.begin(), fronts.end(), [&](const auto& f) {
      return f.second < b || (f.second == b && f.first < a);
    });
    ranks[i] = static_cast<int>(k - fronts.begin());
    if (k == fronts.end()) {
      if (ranks[i] < cap) fronts.emplace_back(a, b);
    } else {
      *k = {a, b};
    }
  }
  return ranks;
}

std::vector<int> ranks_3(std::span<const double> points, int cap) {
  std::vector<Staircase> fronts;
  std::vector<int> ranks(count(points, 3));
  for (size_t i : lex_order(points, 3)) {
    const double* p = points.data() + 3 * i;
    // A point dominated by a member of front k is dominated by a member of every front before.
    auto k = std::partition_point(fronts.begin(), fronts.end(),
                                  [&](const Staircase& f) { return f.dominates(p); });
    ranks[i] = static_cast<int>(k - fronts.begin());
    if (k == fronts.end()) {
      if (ranks[i] < cap) fronts.emplace_back().insert(p);
    } else {
      k->insert(p);
    }
  }
  return ranks;
}

std::vector<int> ranks_n(std::span<const double> points, size_t m, int cap) {
  std::vector<std::vector<size_t>> fronts;
  std::vector<int> ranks(count(points, m));
  for (size_t i : lex_order(points, m)) {
    const double* p = points.data() + i * m;
    auto k = std::partition_point(fronts.begin(), fronts.end(), [&](const std::vector<size_t>& f) {
      // The latest members first: the nearest in the sort order are the likeliest dominators.
      return std::any_of(f.rbegin(), f.rend(),
                         [&](size_t q) { return dominates(points.data() + q * m, p, m); });
    });
    ranks[i] = static_cast<int>(k - fronts.begin());
    if (k == fronts.end()) {
      if (ranks[i] < cap) fronts.push_back({i});
    } else {
      k->push_back(i);
    }
  }
  return ranks;
}

// Four objectives or more: the first fronts peeled off one at a time, each the points no other
// remaining point dominates (a DominanceTree of the remaining points), the rest by ranks_n().
// ranks_n() is quadratic in a large front; each peel costs about n log n, so a chain of thousands
// of small fronts would cost peeling too much: past kMaxPeels fronts ranks_n() takes over.
std::vector<int> ranks_by_peeling(std::span<const double> points, size_t m, int cap) {
  constexpr int kMaxPeels = 64;
  const size_t n = count(points, m);
  std::vector<int> ranks(n, cap);
  std::vector<size_t> remaining(n);
  std::iota(remaining.begin(), remaining.end(), size_t{0});
  std::vector<double> rows(points.begin(), points.end());
  int rank = 0;
  for (; rank < std::min(cap, kMaxPeels) && !remaining.empty(); ++rank) {
    const DominanceTree tree(rows, m);
    std::vector<size_t> next;
    std::vector<double> next_rows;
    for (size_t j = 0; j < remaining.size(); ++j) {
      if (!tree.dominated(j)) {
        ranks[remaining[j]] = rank;
      } else {
        next.push_back(remaining[j]);
        next_rows.insert(next_rows.end(), rows.begin() + static_cast<ptrdiff_t>(j * m),
                         rows.begin() + static_cast<ptrdiff_t>((j + 1) * m));
      }
    }
    remaining = std::move(next);
    rows = std::move(next_rows);
  }
  if (!remaining.empty() && rank < cap) {
    // Ranks among the points left are their ranks less the fronts peeled off before them.
    const std::vector<int> rest = ranks_n(rows, m, cap - rank);
    for (size_t j = 0; j < remaining.size(); ++j) ranks[remaining[j]] = rank + rest[j];
  }
  return ranks;
}

// The rows of `points` strictly below `reference` in every objective.
std::vector<double> below_reference(std::span<const double> points, size_t m,
                                    std::span<const double> reference) {
  std::vector<double> out;
  out.reserve(points.size());
  for (size_t i = 0; i < count(points, m); ++i) {
    const double* p = points.data() + i * m;
    bool below = true;
    for (size_t k = 0; k < m; ++k) below &= p[k] < reference[k];
    if (below) out.insert(out.end(), p, p + m);
  }
  return out;
}

// The hypervolume of points all strictly below the reference (below_reference()).
double volume(std::vector<double> points, size_t m, const double* reference);

double volume_1(const std::vector<double>& points, const double* reference) {
  if (points.empty()) return 0.0;
  return reference[0] - *std::min_element(points.begin(), points.end());
}

double volume_2(std::vector<double> points, const double* reference) {
  const size_t n = points.size() / 2;
  std::vector<std::pair<double, double>> sorted(n);
  for (size_t i = 0; i < n; ++i) sorted[i] = {points[2 * i], points[2 * i + 1]};
  std::sort(sorted.begin(), sorted.end());
  double area = 0.0, lowest = reference[1];
  for (const auto& [a, b] : sorted) {
    if (b >= lowest) continue;
    area += (reference[0] - a) * (lowest - b);
    lowest = b;
  }
  return area;
}

// A sweep along the third objective over the staircase of the first two (Fonseca, Paquete and
// Lopez-Ibanez 2006, with a balanced tree): each point enters the staircase once and leaves it
// at most once, and the staircase's area is kept up to date as it changes.
double volume_3(const std::vector<double>& points, const double* reference) {
  const size_t n = points.size() / 3;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return points[3 * a + 2] < points[3 * b + 2]; });
  std::map<double, double> steps;  // first -> second, the second falling as the first rises
  double area = 0.0, total = 0.0, z = 0.0;
  bool started = false;
  for (size_t i : order) {
    const double a = points[3 * i], b = points[3 * i + 1], c = points[3 * i + 2];
    if (started) total += area * (c - z);
    started = true;
    z = c;
    auto it = steps.lower_bound(a);
    double height = reference[1];  // the staircase's second objective just left of a
    if (it != steps.begin()) {
      height = std::prev(it)->second;
      if (height <= b) continue;  // dominated in the first two objectives
    }
    if (it != steps.end() && it->first == a && it->second <= b) continue;
    double x = a, gain = 0.0;
    while (it != steps.end() && it->second >= b) {
      gain += (it->first - x) * (height - b);
      x = it->first;
      height = it->second;
      it = steps.erase(it);
    }
    const double end = it != steps.end() ? it->first : reference[0];
    gain += (end - x) * (height - b);
    area += gain;
    steps.emplace_hint(it, a, b);
  }
  if (started) total += area * (reference[2] - z);
  return total;
}

// Slices along the first objective (HV by slicing objectives, While et al. 2006): between two
// consecutive values of it, the volume is the (m - 1)-objective hypervolume of the points up to
// there, kept non-dominated as they come in.
double volume_sliced(const std::vector<double>& points, size_t m, const double* reference) {
  const size_t n = points.size() / m;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return points[a * m] < points[b * m]; });
  const size_t d = m - 1;
  std::vector<double> slice;  // the projections so far, non-dominated
  double total = 0.0;
  for (size_t j = 0; j < n; ++j) {
    const double* p = points.data() + order[j] * m + 1;
    bool covered = false;
    for (size_t q = 0; q < slice.size() / d && !covered; ++q) {
      const double* s = slice.data() + q * d;
      covered = dominates(s, p, d) || equal(s, p, d);
    }
    if (!covered) {
      std::vector<double> kept;
      kept.reserve(slice.size() + d);
      for (size_t q = 0; q < slice.size() / d; ++q) {
        const double* s = slice.data() + q * d;
        if (!dominates(p, s, d)) kept.insert(kept.end(), s, s + d);
      }
      kept.insert(kept.end(), p, p + d);
      slice = std::move(kept);
    }
    const double next = j + 1 < n ? points[order[j + 1] * m] : reference[0];
    const double width = next - points[order[j] * m];
    if (width > 0) total += width * volume(slice, d, reference + 1);
  }
  return total;
}

double volume(std::vector<double> points, size_t m, const double* reference) {
  if (points.empty()) return 0.0;
  switch (m) {
    case 1:
      return volume_1(points, reference);
    case 2:
      return volume_2(std::move(points), reference);
    case 3:
      return volume_3(points, reference);
    default:
      return volume_sliced(points, m, reference);
  }
}

double box(const double* p, const double* reference, size_t m) {
  double v = 1.0;
  for (size_t k = 0; k < m; ++k) v *= std::max(0.0, reference[k] - p[k]);
  return v;
}

// The hypervolume that `p` adds to `chosen` (rows of m): its box less the volume of the others'
// boxes clipped to it.
double gain(const double* p, const std::vector<double>& chosen, size_t m, const double* reference) {
  std::vector<double> clipped(chosen.size());
  for (size_t i = 0; i < chosen.size(); ++i) clipped[i] = std::max(chosen[i], p[i % m]);
  return box(p, reference, m) - volume(below_reference(clipped, m, {reference, m}), m, reference);
}

}  // namespace

bool dominates(const double* a, const double* b, size_t m) {
  bool better = false;
  for (size_t k = 0; k < m; ++k) {
    if (a[k] > b[k]) return false;
    better |= a[k] < b[k];
  }
  return better;
}

bool constrained_dominates(const double* a, double violation_a, const double* b, double violation_b,
                           size_t m) {
  const bool feasible_a = !(violation_a > 0), feasible_b = !(violation_b > 0);
  if (feasible_a && feasible_b) return dominates(a, b, m);
  if (feasible_a != feasible_b) return feasible_a;
  return violation_a < violation_b;
}

std::vector<int> non_domination_ranks(std::span<const double> points, size_t m) {
  if (points.empty()) return {};
  constexpr int kAll = std::numeric_limits<int>::max();
  switch (m) {
    case 1:
      return ranks_1(points);
    case 2:
      return ranks_2(points, kAll);
    case 3:
      return ranks_3(points, kAll);
    default:
      return ranks_by_peeling(points, m, kAll);
  }
}

std::vector<int> leading_non_domination_ranks(std::span<const double> points, size_t m,
                                              size_t enough) {
  if (m == 1 || points.empty()) return non_domination_ranks(points, m);
  // Few fronts first, more while they hold fewer than `enough` points.
  for (int cap = 8;; cap *= 4) {
    std::vector<int> ranks = m == 2   ? ranks_2(points, cap)
                             : m == 3 ? ranks_3(points, cap)
                                      : ranks_by_peeling(points, m, cap);
    std::vector<size_t> per_rank(static_cast<size_t>(cap) + 1, 0);
    for (int r : ranks) ++per_rank[static_cast<size_t>(r)];
    size_t held = 0;
    for (int r = 0; r < cap; ++r) {
      held += per_rank[static_cast<size_t>(r)];
      if (held >= enough) {
        for (int& x : ranks) x = std::min(x, r + 1);
        return ranks;
      }
    }
    if (per_rank[static_cast<size_t>(cap)] == 0) return ranks;  // every front was kept
  }
}

std::vector<int> constrained_non_domination_ranks(std::span<const double> points, size_t m,
                                                  std::span<const double> violations) {
  const size_t n = count(points, m);
  std::vector<size_t> feasible, infeasible;
  std::vector<double> feasible_points;
  for (size_t i = 0; i < n; ++i) {
    if (violations[i] > 0) {
      infeasible.push_back(i);
    } else {
      feasible.push_back(i);
      feasible_points.insert(feasible_points.end(), points.begin() + static_cast<ptrdiff_t>(i * m),
                             points.begin() + static_cast<ptrdiff_t>((i + 1) * m));
    }
  }
  std::vector<int> ranks(n, 0);
  int next = 0;
  const std::vector<int> feasible_ranks = non_domination_ranks(feasible_points, m);
  for (size_t j = 0; j < feasible.size(); ++j) {
    ranks[feasible[j]] = feasible_ranks[j];
    next = std::max(next, feasible_ranks[j] + 1);
  }
  std::vector<double> by_violation;
  for (size_t i : infeasible) by_violation.push_back(violations[i]);
  const std::vector<int> infeasible_ranks = ranks_1(by_violation);
  for (size_t j = 0; j < infeasible.size(); ++j) ranks[infeasible[j]] = next + infeasible_ranks[j];
  return ranks;
}

std::vector<size_t> pareto_front(std::span<const double> points, size_t m) {
  const size_t n = count(points, m);
  std::vector<size_t> front;
  if (n == 0) return front;
  if (m == 1) {
    const double best = *std::min_element(points.begin(), points.end());
    for (size_t i = 0; i < n; ++i) {
      if (points[i] == best) front.push_back(i);
    }
    return front;
  }
  if (m >= 4) {
    const DominanceTree tree(points, m);
    for (size_t i = 0; i < n; ++i) {
      if (!tree.dominated(i)) front.push_back(i);
    }
    return front;
  }
  const std::vector<size_t> order = lex_order(points, m);
  if (m == 2) {
    bool any = false;
    double first = 0.0, second = 0.0;  // the front's member of least second objective so far
    for (size_t i : order) {
      const double a = points[2 * i], b = points[2 * i + 1];
      if (any && (second < b || (second == b && first < a))) continue;
      front.push_back(i);
      any = true;
      first = a;
      second = b;
    }
  } else if (m == 3) {
    Staircase stairs;
    for (size_t i : order) {
      const double* p = points.data() + 3 * i;
      if (stairs.dominates(p)) continue;
      front.push_back(i);
      stairs.insert(p);
    }
  }
  std::sort(front.begin(), front.end());
  return front;
}

double hypervolume(std::span<const double> points, size_t m, std::span<const double> reference) {
  return volume(below_reference(points, m, reference), m, reference.data());
}

std::vector<double> hypervolume_contributions(std::span<const double> points, size_t m,
                                              std::span<const double> reference) {
  const size_t n = count(points, m);
  std::vector<double> out(n, 0.0);
  // The points with a box, on the front, with a flag for those another point equals.
  std::vector<size_t> inside;
  std::vector<double> inside_points;
  for (size_t i = 0; i < n; ++i) {
    const double* p = points.data() + i * m;
    bool below = true;
    for (size_t k = 0; k < m; ++k) below &= p[k] < reference[k];
    if (!below) continue;
    inside.push_back(i);
    inside_points.insert(inside_points.end(), p, p + m);
  }
  std::vector<size_t> front;
  for (size_t j : pareto_front(inside_points, m)) front.push_back(inside[j]);
  std::sort(front.begin(), front.end(), [&](size_t a, size_t b) {
    const double* x = points.data() + a * m;
    const double* y = points.data() + b * m;
    return std::lexicographical_compare(x, x + m, y, y + m) || (equal(x, y, m) && a < b);
  });
  std::vector<bool> repeated(front.size(), false);
  for (size_t j = 1; j < front.size(); ++j) {
    if (equal(points.data() + front[j] * m, points.data() + front[j - 1] * m, m)) {
      repeated[j] = repeated[j - 1] = true;
    }
  }
  if (m == 1) {
    if (!front.empty() && !repeated[0]) {
      double second = reference[0];
      for (size_t i : inside) {
        if (i != front[0]) second = std::min(second, points[i]);
      }
      out[front[0]] = second - points[front[0]];
    }
    return out;
  }
  if (m == 2 && front.size() == inside.size()) {
    // No point is dominated, so removing one exposes nothing. Sorted by the first objective,
    // the front falls in the second: each point's own rectangle reaches to its right
    // neighbour's first objective and its left neighbour's second.
    for (size_t j = 0; j < front.size(); ++j) {
      if (repeated[j]) continue;
      const double* p = points.data() + front[j] * 2;
      // Its neighbours differ from it (it is not repeated).
      const double x = j + 1 < front.size() ? points[front[j + 1] * 2] : reference[0];
      const double y = j > 0 ? points[front[j - 1] * 2 + 1] : reference[1];
      out[front[j]] = (x - p[0]) * (y - p[1]);
    }
    return out;
  }
  // Removing a point of the front may expose dominated ones: its gain over all the others.
  std::vector<double> others;
  for (size_t j = 0; j < front.size(); ++j) {
    if (repeated[j]) continue;
    others.clear();
    for (size_t q : inside) {
      if (q != front[j])
        others.insert(others.end(), points.data() + q * m, points.data() + (q + 1) * m);
    }
    out[front[j]] = std::max(0.0, gain(points.data() + front[j] * m, others, m, reference.data()));
  }
  return out;
}

std::vector<size_t> select_by_hypervolume(std::span<const double> points, size_t m, size_t k,
                                          std::span<const double> reference) {
  const size_t n = count(points, m);
  std::vector<size_t> first_k(std::min(k, n));
  std::iota(first_k.begin(), first_k.end(), size_t{0});
  if (k >= n) return first_k;
  for (double r : reference) {
    if (!std::isfinite(r)) return first_k;
  }
  // (bound on the gain, index, how many were chosen when it was computed): the largest bound
  // first, ties to the lower index.
  using Entry = std::tuple<double, size_t, size_t>;
  auto lower = [](const Entry& a, const Entry& b) {
    if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) < std::get<0>(b);
    return std::get<1>(a) > std::get<1>(b);
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(lower)> queue(lower);
  for (size_t i = 0; i < n; ++i) {
    const double v = box(points.data() + i * m, reference.data(), m);
    if (!std::isfinite(v)) return first_k;
    queue.emplace(v, i, 0);
  }
  std::vector<size_t> chosen;
  std::vector<double> chosen_points;
  while (chosen.size() < k) {
    auto [bound, i, stamp] = queue.top();
    queue.pop();
    if (stamp == chosen.size()) {
      chosen.push_back(i);
      chosen_points.insert(chosen_points.end(), points.data() + i * m, points.data() + (i + 1) * m);
      continue;
    }
    const double g = gain(points.data() + i * m, chosen_points, m, reference.data());
    if (!std::isfinite(g)) return first_k;
    // Contributions only shrink as the chosen set grows; rounding must not make one grow.
    queue.emplace(std::clamp(g, 0.0, bound), i, chosen.size());
  }
  return chosen;
}

std::vector<double> nadir_reference(std::span<const double> points, size_t m) {
  std::vector<double> worst(m, -kInf);
  for (size_t i = 0; i < count(points, m); ++i) {
    for (size_t k = 0; k < m; ++k) worst[k] = std::max(worst[k], points[i * m + k]);
  }
  for (double& w : worst) w = w == 0 ? 1e-12 : w + 0.1 * std::abs(w);
  return worst;
}

namespace {

// Constrained optimization: the front is of the feasible trials only (as Optuna's).
bool on_front_candidate(const FrozenTrial& t, size_t m) {
  return t.state == TrialState::kComplete && t.values.size() == m && is_feasible(t);
}

}  // namespace

std::vector<double> feasible_losses(const std::vector<FrozenTrial>& trials,
                                    std::span<const StudyDirection> directions) {
  const size_t m = directions.size();
  std::vector<double> losses;
  for (const FrozenTrial& t : trials) {
    if (!on_front_candidate(t, m)) continue;
    for (size_t k = 0; k < m; ++k) {
      losses.push_back(as_loss(directions[k], t.values[k]));
    }
  }
  return losses;
}

std::vector<FrozenTrial> pareto_front_trials(std::vector<FrozenTrial> trials,
                                             std::span<const StudyDirection> directions) {
  const size_t m = directions.size();
  std::erase_if(trials, [&](const FrozenTrial& t) { return !on_front_candidate(t, m); });
  const std::vector<double> losses = feasible_losses(trials, directions);
  std::vector<FrozenTrial> front;
  for (size_t i : pareto_front(losses, m)) front.push_back(std::move(trials[i]));
  return front;
}

}  // namespace tuner
