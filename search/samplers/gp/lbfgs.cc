#include "search/samplers/gp/lbfgs.h"

#include <cmath>
#include <vector>

namespace tuner {

using Eigen::VectorXd;

VectorXd minimize_lbfgs(const std::function<double(const VectorXd&, VectorXd&)>& f, VectorXd x,
                        int max_iterations, double relative_decrease) {
  constexpr int kMemory = 8;
  std::vector<VectorXd> s_list, y_list;
  VectorXd g(x.size());
  double fx = f(x, g);
  for (int it = 0; it < max_iterations && std::isfinite(fx); ++it) {
    // Two-loop recursion: d = -H g.
    VectorXd q = g;
    std::vector<double> alpha(s_list.size());
    for (int i = static_cast<int>(s_list.size()) - 1; i >= 0; --i) {
      alpha[i] = s_list[i].dot(q) / y_list[i].dot(s_list[i]);
      q -= alpha[i] * y_list[i];
    }
    if (!s_list.empty()) q *= s_list.back().dot(y_list.back()) / y_list.back().squaredNorm();
    for (size_t i = 0; i < s_list.size(); ++i) {
      const double beta = y_list[i].dot(q) / y_list[i].dot(s_list[i]);
      q += s_list[i] * (alpha[i] - beta);
    }
    VectorXd d = -q;
    if (d.dot(g) >= 0) d = -g;  // not a descent direction: steepest descent
    double step = 1.0;
    VectorXd x_new, g_new(x.size());
    double f_new = 0;
    bool moved = false;
    for (int ls = 0; ls < 30; ++ls) {
      x_new = x + step * d;
      f_new = f(x_new, g_new);
      if (std::isfinite(f_new) && f_new <= fx + 1e-4 * step * g.dot(d)) {
        moved = true;
        break;
      }
      step *= 0.5;
    }
    if (!moved) break;
    const VectorXd s = x_new - x, y = g_new - g;
    if (s.dot(y) > 1e-12) {
      s_list.push_back(s);
      y_list.push_back(y);
      if (static_cast<int>(s_list.size()) > kMemory) {
        s_list.erase(s_list.begin());
        y_list.erase(y_list.begin());
      }
    }
    const double change = fx - f_new;
    x = x_new;
    g = g_new;
    fx = f_new;
    if (g.lpNorm<Eigen::Infinity>() < 1e-6 || change < relative_decrease * (1.0 + std::abs(fx)))
      break;
  }
  return x;
}

}  // namespace tuner
