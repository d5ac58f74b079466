#include "executor/engine/data_split.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "executor/job_json.h"
#include "training/rng.h"

namespace tuner::engine {

namespace {

int64_t part(int64_t n, double fraction) {
  if (fraction <= 0) return 0;
  return std::max<int64_t>(1, std::llround(fraction * static_cast<double>(n)));
}

}  // namespace

SplitIndices split_indices(int64_t n, double validation_fraction, double test_fraction,
                           uint64_t seed, const std::string& path) {
  const int64_t n_test = part(n, test_fraction);
  const int64_t n_validation = part(n, validation_fraction);
  if (n - n_test - n_validation < 1) {
    job_json::fail(path, "the file's " + std::to_string(n) + " samples leave none for training (" +
                             std::to_string(n_test) + " test, " + std::to_string(n_validation) +
                             " validation): lower validation_fraction or test_fraction");
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  training::Rng rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  SplitIndices s;
  const auto at = [&](int64_t i) { return order.begin() + i; };
  s.test.assign(at(0), at(n_test));
  s.validation.assign(at(n_test), at(n_test + n_validation));
  s.train.assign(at(n_test + n_validation), order.end());
  std::sort(s.test.begin(), s.test.end());
  std::sort(s.validation.begin(), s.validation.end());
  std::sort(s.train.begin(), s.train.end());
  return s;
}

}  // namespace tuner::engine
