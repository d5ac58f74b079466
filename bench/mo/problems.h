// The multi-objective benchmark problems (bench/mo/README.md): ZDT1, ZDT2, ZDT3 (Zitzler, Deb and
// Thiele 2000), DTLZ2 (Deb, Thiele, Laumanns and Zitzler 2002), WFG4 (Huband, Hingston, Barone
// and While 2006) and C2-DTLZ2 (Jain and Deb 2014), every objective minimized, each with the fixed
// reference point its hypervolume is measured against; and, held out, ZDT4, ZDT6 and DTLZ4, and
// with more than 20 variables DTLZ7, ZDT6 with 40 and DTLZ2 with 40.
//
// Thread safety: the table is constant; evaluate() is a pure function.
#ifndef TUNER_BENCH_MO_PROBLEMS_H_
#define TUNER_BENCH_MO_PROBLEMS_H_

#include <span>
#include <string>
#include <vector>

namespace tuner::bench {

struct MoProblem {
  std::string name;
  int n_vars = 0;
  int n_objectives = 0;
  std::vector<double> lower, upper;  // per variable
  bool constrained = false;          // one constraint value, feasible when <= 0
  std::vector<double> reference;     // per objective
  std::string description;
  // Not one of the benchmark's problems: for choosing defaults without looking at its results
  // (README.md, "Held-out problems"). "all" leaves these out.
  bool held_out = false;
};

const std::vector<MoProblem>& mo_problems();
// nullptr when there is none of that name.
const MoProblem* find_mo_problem(const std::string& name);

struct MoValues {
  std::vector<double> objectives;
  double constraint = 0.0;  // <= 0: feasible
};

// REQUIRES: x.size() == problem.n_vars, each inside its bounds.
MoValues evaluate(const MoProblem& problem, std::span<const double> x);

// The hypervolume of the feasible points among `values` (n x n_objectives, row-major;
// `constraints`: n values, or empty when none) against the problem's reference point.
double feasible_hypervolume(const MoProblem& problem, std::span<const double> values,
                            std::span<const double> constraints);

}  // namespace tuner::bench

#endif  // TUNER_BENCH_MO_PROBLEMS_H_
