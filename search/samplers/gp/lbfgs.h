// minimize_lbfgs: unconstrained minimization by L-BFGS, for the Gaussian process's kernel
// parameters and the GP sampler's acquisition. Internal to search/ (Eigen types: include it from
// .cc files only).
#ifndef TUNER_SEARCH_SAMPLERS_GP_LBFGS_H_
#define TUNER_SEARCH_SAMPLERS_GP_LBFGS_H_

#include <Eigen/Core>
#include <functional>

namespace tuner {

// Minimizes f (which returns its value at x and fills the gradient) by L-BFGS (memory 8) with a
// backtracking (Armijo) line search, from `x`, for at most `max_iterations` steps; stops early
// when the gradient's largest component falls below 1e-6 or a step decreases f by less than
// `relative_decrease` * (1 + |f|). Returns the last accepted point.
Eigen::VectorXd minimize_lbfgs(
    const std::function<double(const Eigen::VectorXd&, Eigen::VectorXd&)>& f, Eigen::VectorXd x,
    int max_iterations, double relative_decrease = 1e-10);

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_GP_LBFGS_H_
