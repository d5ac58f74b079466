// The two-sample Kolmogorov-Smirnov test: the largest distance between the two samples'
// empirical distribution functions, and its p-value under the hypothesis that both come from the
// same continuous distribution, from the asymptotic Kolmogorov distribution (docs/drift.md).
// Pure functions; thread-safe.
#ifndef TUNER_DRIFT_KS_H_
#define TUNER_DRIFT_KS_H_

#include <span>

namespace tuner::drift {

struct KsResult {
  double statistic = 0;  // D = sup_x |F_ref(x) - F_cur(x)|, in [0, 1]
  double p_value = 1;    // P(K > sqrt(n m / (n + m)) D), K Kolmogorov-distributed
};

// REQUIRES: both non-empty (else std::invalid_argument). Ties are handled exactly in D (both
// functions step past a repeated value together); the p-value is then conservative.
KsResult ks_two_sample(std::span<const double> reference, std::span<const double> current);

// The Kolmogorov distribution's survival function, P(K > z) = 2 sum_{k>=1} (-1)^(k-1)
// exp(-2 k^2 z^2) (scipy.stats.kstwobign.sf); 1 for z <= 0. Absolute error below 1e-15.
double kolmogorov_survival(double z);

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_KS_H_
