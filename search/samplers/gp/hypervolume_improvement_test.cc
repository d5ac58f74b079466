#include "search/samplers/gp/hypervolume_improvement.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "search/pareto.h"
#include "search/rng.h"

namespace tuner {
namespace {

// A random front of n points in m objectives in [0, 1)^m (dominated points included: the boxes
// must not depend on them).
std::vector<double> random_points(size_t n, size_t m, Rng& rng) {
  std::vector<double> p(n * m);
  for (double& v : p) v = rng.uniform();
  return p;
}

// With no uncertainty the expected improvement is the improvement: the hypervolume the point adds
// to the front, as search/pareto.h computes it, for 2 and 3 objectives.
TEST(HypervolumeImprovement, WithoutUncertaintyItIsTheVolumeThePointAdds) {
  Rng rng(7);
  for (size_t m : {2, 3}) {
    const std::vector<double> reference(m, 1.1);
    for (int round = 0; round < 20; ++round) {
      const std::vector<double> points = random_points(12, m, rng);
      std::vector<double> front;
      for (size_t i : pareto_front(points, m)) {
        front.insert(front.end(), points.begin() + i * m, points.begin() + (i + 1) * m);
      }
      const NonDominatedBoxes boxes = non_dominated_boxes(front, m, reference);
      Rng sample_rng(static_cast<uint64_t>(round));
      const std::vector<double> z = normal_samples(16, m, sample_rng);
      std::vector<double> mean = random_points(1, m, rng), sd(m, 0.0);
      std::vector<double> with = front;
      with.insert(with.end(), mean.begin(), mean.end());
      const double adds = hypervolume(with, m, reference) - hypervolume(front, m, reference);
      EXPECT_NEAR(expected_improvement_volume(mean.data(), sd.data(), z, boxes), adds, 1e-12)
          << "m " << m << ", round " << round;
    }
  }
}

// The derivatives it gives are those of the Monte Carlo mean (central differences).
TEST(HypervolumeImprovement, ItsDerivativesMatchFiniteDifferences) {
  Rng rng(11);
  const size_t m = 2;
  const std::vector<double> reference(m, 1.1);
  const std::vector<double> front = {0.1, 0.8, 0.4, 0.5, 0.7, 0.2};
  const NonDominatedBoxes boxes = non_dominated_boxes(front, m, reference);
  const std::vector<double> z = normal_samples(64, m, rng);
  std::vector<double> mean = {0.45, 0.55}, sd = {0.1, 0.2};
  std::vector<double> d_mean(m), d_sd(m);
  expected_improvement_volume(mean.data(), sd.data(), z, boxes, d_mean.data(), d_sd.data());
  const double h = 1e-6;
  for (size_t j = 0; j < m; ++j) {
    std::vector<double> up = mean, down = mean;
    up[j] += h, down[j] -= h;
    const double numeric = (expected_improvement_volume(up.data(), sd.data(), z, boxes) -
                            expected_improvement_volume(down.data(), sd.data(), z, boxes)) /
                           (2 * h);
    EXPECT_NEAR(d_mean[j], numeric, 1e-5) << j;
    std::vector<double> sd_up = sd, sd_down = sd;
    sd_up[j] += h, sd_down[j] -= h;
    const double numeric_sd = (expected_improvement_volume(mean.data(), sd_up.data(), z, boxes) -
                               expected_improvement_volume(mean.data(), sd_down.data(), z, boxes)) /
                              (2 * h);
    EXPECT_NEAR(d_sd[j], numeric_sd, 1e-5) << j;
  }
}

// The same Rng, the same samples; the samples are standard normal in the mean.
TEST(HypervolumeImprovement, NormalSamplesAreFixedByTheirRng) {
  Rng a(3), b(3);
  EXPECT_EQ(normal_samples(128, 3, a), normal_samples(128, 3, b));
  Rng c(5);
  const std::vector<double> z = normal_samples(1024, 1, c);
  double sum = 0, squares = 0;
  for (double v : z) sum += v, squares += v * v;
  EXPECT_NEAR(sum / 1024, 0.0, 0.02);
  EXPECT_NEAR(squares / 1024, 1.0, 0.05);
}

}  // namespace
}  // namespace tuner
