// A model with embeddings on the CUDA backend (whose lookups run on the host between download and
// upload) trains to the CPU backend's weights and losses; skipped where there is no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cuda/cuda_backend.h"
#include "training/backends/model_run_testing.h"
#include "training/rng.h"

namespace tuner::training {
namespace {

constexpr const char* kTableSpec = R"({"input": [3], "embeddings": [
    {"at": 1, "categories": 6, "dim": 3}], "layers": [
    {"type": "linear", "out": 8}, {"type": "relu"}, {"type": "linear", "out": 3}]})";

// Rows [noise, category index, noise] whose class is the category mod 3.
Dataset categories(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int64_t i = 0; i < n; ++i) {
    const int category = static_cast<int>(rng.next_u64() % 6);
    x.insert(x.end(), {rng.normal(), static_cast<float>(category), rng.normal()});
    y.push_back(category % 3);
  }
  return Dataset(Shape{3}, std::move(x), std::move(y), 3);
}

TEST(CudaEmbeddingModel, TrainsToTheCpuWeightsAndLosses) {
  const std::string why = cuda_backend_unavailable(0);
  if (!why.empty()) GTEST_SKIP() << "no GPU: " << why;
  std::unique_ptr<Backend> gpu = make_cuda_backend(0);
  CpuBackend cpu(1);
  const Dataset train = categories(96, 1), val = categories(48, 2);
  ModelRun on_cpu(cpu, train, val, 3, kTableSpec), on_gpu(*gpu, train, val, 3, kTableSpec);
  const TrainResult c = on_cpu.trainer.run(), g = on_gpu.trainer.run();
  ASSERT_EQ(c.history.size(), g.history.size());
  for (size_t e = 0; e < c.history.size(); ++e) {
    EXPECT_NEAR(g.history[e].train_loss, c.history[e].train_loss, 2e-3) << "epoch " << e;
    EXPECT_NEAR(g.history[e].val_loss, c.history[e].val_loss, 2e-3) << "epoch " << e;
  }
  EXPECT_LT(max_abs_diff(on_gpu.model->parameters().values_to_host(),
                         on_cpu.model->parameters().values_to_host()),
            2e-3);
}

}  // namespace
}  // namespace tuner::training
