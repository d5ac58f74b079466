// Pareto: domination, non-dominated sorting, constrained domination and hypervolume.
//
// Every function works on loss vectors: smaller is better in every objective (a study's values
// with its maximized objectives negated). `points` holds n points of m objectives, row-major:
// point i is points[i * m, (i + 1) * m). REQUIRES: m >= 1, points.size() a multiple of m, and no
// NaN among the values (infinities are allowed in the sorting; the hypervolume ignores a point
// that is not strictly better than the reference in every objective).
//
// Costs, n points: non_domination_ranks() in O(n log n) for 2 objectives (a sort and a sweep),
// O(n log^2 n) for 3 (per front, a staircase of the last two objectives), and for more an
// incremental front building over the points sorted lexicographically with a binary search over
// the fronts (Zhang et al. 2015, ENS-BS), O(m n^2) at worst. hypervolume(): O(n log n) for 2 and
// 3 objectives (sweeps), by slicing along the first objective down to 3 for more.
//
// Thread safety: pure functions.
#ifndef TUNER_SEARCH_PARETO_H_
#define TUNER_SEARCH_PARETO_H_

#include <cstddef>
#include <span>
#include <vector>

#include "trials/frozen_trial.h"
#include "trials/trial_state.h"

namespace tuner {

// True when a is no worse than b in every one of the m objectives and better in at least one.
bool dominates(const double* a, const double* b, size_t m);

// Constrained domination (Deb et al. 2002; Optuna's NSGA-II and TPE): a feasible point
// (violation 0) beats an infeasible one (violation > 0); of two infeasible points the one with
// the smaller violation wins; of two feasible ones, dominates(). A violation is the sum of the
// positive constraint values (trials/constraints.h, constraint_violation()).
bool constrained_dominates(const double* a, double violation_a, const double* b, double violation_b,
                           size_t m);

// The non-domination rank of every point: 0 for the points no other dominates, 1 for those
// only rank-0 points dominate, and so on. Equal points share a rank.
std::vector<int> non_domination_ranks(std::span<const double> points, size_t m);

// non_domination_ranks() of the leading fronts, those up to the first that brings their count
// to `enough` points or more; every other point gets the rank after them. What TPE's split of
// several objectives needs: the best tenth, without ranking the rest.
std::vector<int> leading_non_domination_ranks(std::span<const double> points, size_t m,
                                              size_t enough);

// Ranks under constrained domination: the feasible points (violation <= 0) by
// non_domination_ranks(), then the infeasible ones by violation, least first (equal violations
// share a rank), from one past the largest feasible rank. REQUIRES: violations.size() == n.
std::vector<int> constrained_non_domination_ranks(std::span<const double> points, size_t m,
                                                  std::span<const double> violations);

// The indices of the rank-0 points, ascending.
std::vector<size_t> pareto_front(std::span<const double> points, size_t m);

// The volume dominated by the points and bounded by `reference` (m values): the measure of the
// union of the boxes [p, reference]. A point not below the reference in every objective adds
// nothing. 0 for no point.
double hypervolume(std::span<const double> points, size_t m, std::span<const double> reference);

// Each point's exclusive contribution: hypervolume(all) - hypervolume(all but it). 0 for a
// dominated point and for each of two equal points. (Pass a front alone for the contributions
// within it.)
std::vector<double> hypervolume_contributions(std::span<const double> points, size_t m,
                                              std::span<const double> reference);

// A subset of k points of large hypervolume (the hypervolume subset selection problem), chosen
// greedily: each step adds the point that adds the most volume (a 1 - 1/e approximation; lazy
// evaluation, as contributions only shrink). Ties go to the lower index. Returns the indices in
// the order chosen; all of them when k >= n. When the volumes overflow (a reference or a point
// too far out to multiply), the first k indices.
std::vector<size_t> select_by_hypervolume(std::span<const double> points, size_t m, size_t k,
                                          std::span<const double> reference);

// The trials of `trials` that are COMPLETE, feasible (trials/constraints.h) and dominated by no
// other such trial under `directions`, in their given order: a study's Pareto front, as Optuna's
// best_trials (Study::best_trials, `tuner best`). Trials with another number of values than
// directions are left out.
std::vector<FrozenTrial> pareto_front_trials(std::vector<FrozenTrial> trials,
                                             std::span<const StudyDirection> directions);

// The loss vectors (maximized objectives negated; row-major, as above) of the trials that
// pareto_front_trials considers (COMPLETE, feasible, one value per direction), in their order.
std::vector<double> feasible_losses(const std::vector<FrozenTrial>& trials,
                                    std::span<const StudyDirection> directions);

// A reference point just beyond the worst value of each objective: worst + 10% of its magnitude,
// or worst + 1e-12 where the worst is 0 (so that every point has some volume).
std::vector<double> nadir_reference(std::span<const double> points, size_t m);

}  // namespace tuner

#endif  // TUNER_SEARCH_PARETO_H_
