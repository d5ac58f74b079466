#include "drift/chi_square.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace tuner::drift {
namespace {

// P(a, x) by its power series, for x < a + 1 (where it converges fast).
double lower_gamma_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 1000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::abs(term) < std::abs(sum) * 1e-16) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Q(a, x) by its continued fraction (modified Lentz), for x >= a + 1.
double upper_gamma_fraction(double a, double x) {
  constexpr double kTiny =
      std::numeric_limits<double>::min() / std::numeric_limits<double>::epsilon();
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::abs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

}  // namespace

double chi_square_survival(double x, double df) {
  if (!(df > 0)) throw std::invalid_argument("chi_square_survival: df must be > 0");
  if (!(x > 0)) return 1.0;
  const double a = df / 2, half = x / 2;
  if (half < a + 1) return 1.0 - lower_gamma_series(a, half);
  return upper_gamma_fraction(a, half);
}

ChiSquareResult chi_square_homogeneity(std::span<const int64_t> reference,
                                       std::span<const int64_t> current) {
  if (reference.size() != current.size()) {
    throw std::invalid_argument("chi_square_homogeneity: count vectors of different sizes");
  }
  double n = 0, m = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    n += static_cast<double>(reference[k]);
    m += static_cast<double>(current[k]);
  }
  if (!(n > 0) || !(m > 0)) throw std::invalid_argument("chi_square_homogeneity: an empty sample");
  ChiSquareResult r;
  int categories = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    const double total = static_cast<double>(reference[k] + current[k]);
    if (total == 0) continue;
    ++categories;
    const double e_ref = total * n / (n + m), e_cur = total * m / (n + m);
    const double d_ref = static_cast<double>(reference[k]) - e_ref;
    const double d_cur = static_cast<double>(current[k]) - e_cur;
    r.statistic += d_ref * d_ref / e_ref + d_cur * d_cur / e_cur;
  }
  r.df = categories - 1;
  r.p_value = r.df > 0 ? chi_square_survival(r.statistic, r.df) : 1.0;
  return r;
}

}  // namespace tuner::drift
