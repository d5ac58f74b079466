// The problems and the hypervolume as a C library, for bench/mo/optuna_mo.py (ctypes), so that
// Optuna's runs evaluate the same objectives and are measured by the same code as tuner's.
#include <cstring>

#include "bench/mo/problems.h"

using tuner::bench::mo_problems;
using tuner::bench::MoProblem;

namespace {
const MoProblem* at(int i) {
  if (i < 0 || static_cast<size_t>(i) >= mo_problems().size()) return nullptr;
  return &mo_problems()[static_cast<size_t>(i)];
}
}  // namespace

extern "C" {

int mo_count() { return static_cast<int>(mo_problems().size()); }

const char* mo_name(int i) { return at(i) ? at(i)->name.c_str() : ""; }

// n_vars, n_objectives, constrained; -1 for an unknown problem.
int mo_shape(int i, int* n_vars, int* n_objectives, int* constrained) {
  const MoProblem* p = at(i);
  if (!p) return -1;
  *n_vars = p->n_vars;
  *n_objectives = p->n_objectives;
  *constrained = p->constrained ? 1 : 0;
  return 0;
}

int mo_bounds(int i, double* lower, double* upper) {
  const MoProblem* p = at(i);
  if (!p) return -1;
  std::memcpy(lower, p->lower.data(), p->lower.size() * sizeof(double));
  std::memcpy(upper, p->upper.data(), p->upper.size() * sizeof(double));
  return 0;
}

// objectives: n_objectives values; constraint: one.
int mo_eval(int i, const double* x, double* objectives, double* constraint) {
  const MoProblem* p = at(i);
  if (!p) return -1;
  tuner::bench::MoValues v = evaluate(*p, {x, static_cast<size_t>(p->n_vars)});
  std::memcpy(objectives, v.objectives.data(), v.objectives.size() * sizeof(double));
  *constraint = v.constraint;
  return 0;
}

// The feasible hypervolume of n points (n x n_objectives values; constraints: n values or null).
double mo_hypervolume(int i, int n, const double* values, const double* constraints) {
  const MoProblem* p = at(i);
  if (!p || n < 0) return -1.0;
  const size_t count = static_cast<size_t>(n);
  return feasible_hypervolume(
      *p, {values, count * static_cast<size_t>(p->n_objectives)},
      constraints ? std::span<const double>{constraints, count} : std::span<const double>{});
}

}  // extern "C"
