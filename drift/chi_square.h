// Pearson's chi-square test of homogeneity of two samples of a categorical variable (the predicted
// class): are the class frequencies of the reference and the current sample the same
// distribution? Pure functions; thread-safe.
#ifndef TUNER_DRIFT_CHI_SQUARE_H_
#define TUNER_DRIFT_CHI_SQUARE_H_

#include <cstdint>
#include <span>

namespace tuner::drift {

struct ChiSquareResult {
  double statistic = 0;  // sum over both rows and every category of (O - E)^2 / E
  int df = 0;            // categories seen in either sample - 1
  double p_value = 1;    // P(chi2_df > statistic); 1 when df == 0
};

// The 2 x K contingency table of the two count vectors (scipy.stats.chi2_contingency without
// Yates' correction); categories empty in both are left out. REQUIRES: equal sizes, each with a
// positive total (else std::invalid_argument).
ChiSquareResult chi_square_homogeneity(std::span<const int64_t> reference,
                                       std::span<const int64_t> current);

// P(chi2_df > x), the upper regularized incomplete gamma function Q(df / 2, x / 2); relative error
// about 1e-14. REQUIRES: df > 0.
double chi_square_survival(double x, double df);

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_CHI_SQUARE_H_
