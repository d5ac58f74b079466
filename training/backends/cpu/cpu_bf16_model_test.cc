// Whole models on the CPU backend in bf16 mixed precision: an MLP and a CNN with batch
// norm and a residual block train to the loss of fp32 from the same seeds, deterministically;
// with 1 thread and with 2 (the products are split over the threads either way). Skipped on a CPU
// with neither AMX nor AVX512-BF16.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/model_run_testing.h"

namespace tuner::training {
namespace {

// Convolutions (one fused with its pooling), batch norm, GELU and a residual block with layer
// norm: the products bf16 changes, and the fp32 kernels around them.
constexpr const char* kCnnSpec = R"({"input": [1, 8, 8], "layers": [
    {"type": "conv2d", "out": 8, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2},
    {"type": "conv2d", "out": 16, "kernel": 3, "padding": 1}, {"type": "batch_norm"},
    {"type": "gelu"}, {"type": "flatten"}, {"type": "linear", "out": 32},
    {"type": "residual", "body": [{"type": "layer_norm"}, {"type": "linear", "out": 32},
                                   {"type": "relu"}]},
    {"type": "linear", "out": 4}]})";

class CpuBf16Model : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    const std::string why = cpu_bf16_unavailable();
    if (!why.empty()) GTEST_SKIP() << "no bf16 on this CPU: " << why;
    fp32_ = make_cpu_backend(GetParam());
    bf16_ = make_cpu_backend(GetParam(), Precision::kBfloat16);
  }
  std::unique_ptr<Backend> fp32_, bf16_;
};

TEST_P(CpuBf16Model, MlpTrainsToTheFp32Loss) {
  expect_bf16_trains_to_fp32_loss(*fp32_, *bf16_, kBf16MlpSpec);
}

TEST_P(CpuBf16Model, CnnWithNormsAndResidualTrainsToTheFp32Loss) {
  expect_bf16_trains_to_fp32_loss(*fp32_, *bf16_, kCnnSpec);
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuBf16Model, ::testing::Values(1, 2),
                         [](const auto& p) { return std::to_string(p.param) + "_threads"; });

}  // namespace
}  // namespace tuner::training
