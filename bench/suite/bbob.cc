#include "bench/suite/bbob.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "bench/suite/instance_rng.h"

namespace tuner::bench::suite {
namespace {

// T_osz of one coordinate.
double tosz(double x) {
  if (x == 0.0) return 0.0;
  const double xh = std::log(std::fabs(x));
  const double c1 = x > 0 ? 10.0 : 5.5;
  const double c2 = x > 0 ? 7.9 : 3.1;
  return std::copysign(std::exp(xh + 0.049 * (std::sin(c1 * xh) + std::sin(c2 * xh))), x);
}

void tosz(std::vector<double>& v) {
  for (double& x : v) x = tosz(x);
}

// T_asy^beta.
void tasy(std::vector<double>& v, double beta) {
  const double last = static_cast<double>(v.size() - 1);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] > 0) {
      v[i] = std::pow(v[i], 1.0 + beta * static_cast<double>(i) / last * std::sqrt(v[i]));
    }
  }
}

// The i-th diagonal element of Lambda^alpha in `dim` dimensions.
double lambda(double alpha, size_t i, size_t dim) {
  return std::pow(alpha, 0.5 * static_cast<double>(i) / static_cast<double>(dim - 1));
}

double fpen(const std::vector<double>& x) {
  double s = 0.0;
  for (double v : x) {
    const double over = std::fabs(v) - 5.0;
    if (over > 0) s += over * over;
  }
  return s;
}

double rastrigin_core(const std::vector<double>& z) {
  double c = 0.0, s = 0.0;
  for (double v : z) {
    c += std::cos(2.0 * std::numbers::pi * v);
    s += v * v;
  }
  return 10.0 * (static_cast<double>(z.size()) - c) + s;
}

double ellipsoid_core(const std::vector<double>& z) {
  const size_t d = z.size();
  double s = 0.0;
  for (size_t i = 0; i < d; ++i) {
    s += std::pow(10.0, 6.0 * static_cast<double>(i) / static_cast<double>(d - 1)) * z[i] * z[i];
  }
  return s;
}

constexpr int kGallagherPeaks = 101;
constexpr double kSchwefelOpt = 4.2096874633 / 2.0;

}  // namespace

const std::vector<int>& bbob_ids() {
  static const std::vector<int> ids = {1, 2, 3, 5, 6, 8, 10, 15, 20, 21};
  return ids;
}

std::string bbob_name(int id) {
  switch (id) {
    case 1:
      return "sphere";
    case 2:
      return "ellipsoid";
    case 3:
      return "rastrigin";
    case 5:
      return "linear_slope";
    case 6:
      return "attractive_sector";
    case 8:
      return "rosenbrock";
    case 10:
      return "ellipsoid_rotated";
    case 15:
      return "rastrigin_rotated";
    case 20:
      return "schwefel";
    case 21:
      return "gallagher101";
    default:
      throw std::invalid_argument("BBOB function f" + std::to_string(id) +
                                  " is not in bench/suite/bbob.h (1 2 3 5 6 8 10 15 20 21)");
  }
}

BbobFunction::BbobFunction(int id, int dim, uint64_t instance) : id_(id), dim_(dim) {
  bbob_name(id);  // validates the id
  if (dim < 2) throw std::invalid_argument("BBOB functions need dim >= 2");
  const size_t d = static_cast<size_t>(dim);
  InstanceRng rng(0xB0B0000000000000ULL ^ (static_cast<uint64_t>(id) << 40) ^
                  (static_cast<uint64_t>(dim) << 24) ^ instance);
  x_opt_.resize(d);
  for (double& v : x_opt_) v = rng.uniform(-4.0, 4.0);
  r_ = random_rotation(dim, rng);
  q_ = random_rotation(dim, rng);
  switch (id) {
    case 5:
      for (double& v : x_opt_) v = 5.0 * rng.sign();
      break;
    case 8:
      for (double& v : x_opt_) v *= 0.75;  // [-3, 3]
      break;
    case 20:
      signs_.resize(d);
      for (size_t i = 0; i < d; ++i) {
        signs_[i] = rng.sign();
        x_opt_[i] = kSchwefelOpt * signs_[i];
      }
      break;
    case 21: {
      peaks_.resize(kGallagherPeaks * d);
      peak_diag_.resize(kGallagherPeaks * d);
      peak_w_.resize(kGallagherPeaks);
      // alpha_1 = 1000; the others a random order of 1000^(2j/99), j = 0..99.
      std::vector<double> alphas(kGallagherPeaks - 1);
      for (int j = 0; j < kGallagherPeaks - 1; ++j) alphas[j] = std::pow(1000.0, 2.0 * j / 99.0);
      for (size_t j = alphas.size() - 1; j > 0; --j) {
        std::swap(alphas[j], alphas[rng.next() % (j + 1)]);
      }
      for (int p = 0; p < kGallagherPeaks; ++p) {
        const double alpha = p == 0 ? 1000.0 : alphas[static_cast<size_t>(p - 1)];
        peak_w_[p] = p == 0 ? 10.0 : 1.1 + 8.0 * (p - 1) / 99.0;
        std::vector<double> y(d);
        for (size_t k = 0; k < d; ++k) y[k] = p == 0 ? x_opt_[k] : rng.uniform(-5.0, 5.0);
        y = rotate(r_, y);  // stored rotated: the quadratic form is in R's coordinates
        std::copy(y.begin(), y.end(), peaks_.begin() + static_cast<std::ptrdiff_t>(p * d));
        // Lambda^alpha / alpha^(1/4), its diagonal in a random order.
        std::vector<size_t> order(d);
        std::iota(order.begin(), order.end(), size_t{0});
        for (size_t j = d - 1; j > 0; --j) std::swap(order[j], order[rng.next() % (j + 1)]);
        for (size_t k = 0; k < d; ++k) {
          peak_diag_[static_cast<size_t>(p) * d + k] =
              lambda(alpha, order[k], d) / std::pow(alpha, 0.25);
        }
      }
      break;
    }
    default:
      break;
  }
}

BbobFunction::BbobFunction(int id, std::vector<double> x_opt)
    : id_(id), dim_(static_cast<int>(x_opt.size())), x_opt_(std::move(x_opt)) {
  bbob_name(id);  // validates the id
  if (id == 6 || id == 10 || id == 15 || id == 21) {
    throw std::invalid_argument("BBOB f" + std::to_string(id) +
                                " needs its rotations (and peaks), not only an optimum");
  }
  if (dim_ < 2) throw std::invalid_argument("BBOB functions need dim >= 2");
  if (id == 20) {
    signs_.resize(x_opt_.size());
    for (size_t i = 0; i < x_opt_.size(); ++i) signs_[i] = x_opt_[i] > 0 ? 1.0 : -1.0;
  }
}

std::vector<double> BbobFunction::rotate(const Matrix& m, const std::vector<double>& v) const {
  const size_t d = v.size();
  std::vector<double> out(d, 0.0);
  for (size_t i = 0; i < d; ++i) {
    double s = 0.0;
    for (size_t k = 0; k < d; ++k) s += m[i * d + k] * v[k];
    out[i] = s;
  }
  return out;
}

double BbobFunction::operator()(const std::vector<double>& x) const {
  const size_t d = static_cast<size_t>(dim_);
  if (x.size() != d) {
    throw std::invalid_argument("BBOB f" + std::to_string(id_) + " in " + std::to_string(d) +
                                " dimensions got " + std::to_string(x.size()) + " values");
  }
  std::vector<double> z(d);
  for (size_t i = 0; i < d; ++i) z[i] = x[i] - x_opt_[i];
  switch (id_) {
    case 1: {
      double s = 0.0;
      for (double v : z) s += v * v;
      return s;
    }
    case 2:
      tosz(z);
      return ellipsoid_core(z);
    case 3:
      tosz(z);
      tasy(z, 0.2);
      for (size_t i = 0; i < d; ++i) z[i] *= lambda(10.0, i, d);
      return rastrigin_core(z);
    case 5: {
      double f = 0.0;
      for (size_t i = 0; i < d; ++i) {
        const double s = std::copysign(
            std::pow(10.0, static_cast<double>(i) / static_cast<double>(d - 1)), x_opt_[i]);
        const double zi = x_opt_[i] * x[i] < 25.0 ? x[i] : x_opt_[i];
        f += 5.0 * std::fabs(s) - s * zi;
      }
      return f;
    }
    case 6: {
      z = rotate(r_, z);
      for (size_t i = 0; i < d; ++i) z[i] *= lambda(10.0, i, d);
      z = rotate(q_, z);
      double s = 0.0;
      for (size_t i = 0; i < d; ++i) {
        const double si = z[i] * x_opt_[i] > 0 ? 100.0 : 1.0;
        s += (si * z[i]) * (si * z[i]);
      }
      return std::pow(tosz(s), 0.9);
    }
    case 8: {
      const double scale = std::max(1.0, std::sqrt(static_cast<double>(d)) / 8.0);
      for (double& v : z) v = scale * v + 1.0;
      double f = 0.0;
      for (size_t i = 0; i + 1 < d; ++i) {
        f += 100.0 * std::pow(z[i] * z[i] - z[i + 1], 2) + std::pow(z[i] - 1.0, 2);
      }
      return f;
    }
    case 10:
      z = rotate(r_, z);
      tosz(z);
      return ellipsoid_core(z);
    case 15:
      z = rotate(r_, z);
      tosz(z);
      tasy(z, 0.2);
      z = rotate(q_, z);
      for (size_t i = 0; i < d; ++i) z[i] *= lambda(10.0, i, d);
      z = rotate(r_, z);
      return rastrigin_core(z);
    case 20: {
      std::vector<double> xh(d), zh(d);
      for (size_t i = 0; i < d; ++i) xh[i] = 2.0 * signs_[i] * x[i];
      zh[0] = xh[0];
      for (size_t i = 1; i < d; ++i) {
        zh[i] = xh[i] + 0.25 * (xh[i - 1] - 2.0 * std::fabs(x_opt_[i - 1]));
      }
      double s = 0.0;
      std::vector<double> zs(d);
      for (size_t i = 0; i < d; ++i) {
        const double two_opt = 2.0 * std::fabs(x_opt_[i]);
        z[i] = 100.0 * (lambda(10.0, i, d) * (zh[i] - two_opt) + two_opt);
        s += z[i] * std::sin(std::sqrt(std::fabs(z[i])));
        zs[i] = z[i] / 100.0;
      }
      return -s / (100.0 * static_cast<double>(d)) + 4.189828872724339 + 100.0 * fpen(zs);
    }
    case 21: {
      const std::vector<double> rx = rotate(r_, x);
      double best = 0.0;
      for (int p = 0; p < kGallagherPeaks; ++p) {
        const double* ry = &peaks_[static_cast<size_t>(p) * d];
        double q = 0.0;
        for (size_t k = 0; k < d; ++k) {
          const double u = rx[k] - ry[k];
          q += peak_diag_[static_cast<size_t>(p) * d + k] * u * u;
        }
        best = std::max(best, peak_w_[p] * std::exp(-q / (2.0 * static_cast<double>(d))));
      }
      const double t = tosz(10.0 - best);
      return t * t + fpen(x);
    }
    default:
      throw std::logic_error("unreachable BBOB id");
  }
}

}  // namespace tuner::bench::suite
