// Whole models on the CUDA backend against the CPU backend: the same spec and seed train to the
// same weights and metrics (to float tolerance), and a checkpoint written on the GPU continues on
// the CPU and back; in bf16 mixed precision, an MLP trains to the loss of fp32; with cuDNN's
// convolutions, a CNN trains to the CPU's weights. The op-by-op comparison is
// backend_ops_test.cc; these tests skip where there is no GPU (or no cuDNN).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cuda/cuda_backend.h"
#include "training/backends/model_run_testing.h"
#include "training/checkpoint.h"
#include "training/distributed/nccl_communicator.h"
#include "training/model_spec.h"
#include "training/optim/adam.h"
#include "training/optim/lr_schedule.h"
#include "training/test_datasets.h"
#include "training/trainer.h"

namespace tuner::training {
namespace {

Dataset quadrants(int64_t n, uint64_t seed) { return quadrant_images(n, seed); }

// Every layer kind the CUDA backend runs, dropout and batch norm included (their masks and
// statistics must match the CPU's too).
constexpr const char* kSpec = R"({"input": [1, 8, 8], "layers": [
    {"type": "conv2d", "out": 6, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "batch_norm"}, {"type": "max_pool2d", "kernel": 2},
    {"type": "conv2d", "out": 8, "kernel": 3, "stride": 2, "padding": 1, "activation": "gelu"},
    {"type": "avg_pool2d", "kernel": 2}, {"type": "flatten"},
    {"type": "dropout", "p": 0.2}, {"type": "linear", "out": 16}, {"type": "tanh"},
    {"type": "residual", "body": [{"type": "layer_norm"}, {"type": "linear", "out": 16},
                                   {"type": "sigmoid"}]},
    {"type": "linear", "out": 4}]})";

// Two convolutions (one fused with its max pooling, one strided with a non-fusable activation)
// and the layers around them: what Convolution::kCudnn changes.
constexpr const char* kCnnSpec = R"({"input": [1, 8, 8], "layers": [
    {"type": "conv2d", "out": 6, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2},
    {"type": "conv2d", "out": 8, "kernel": 3, "stride": 2, "padding": 1, "activation": "gelu"},
    {"type": "conv2d", "out": 8, "kernel": 1}, {"type": "tanh"},
    {"type": "flatten"}, {"type": "linear", "out": 16}, {"type": "relu"},
    {"type": "linear", "out": 4}]})";

constexpr CudaBackendOptions kCudnnOptions{.convolution = Convolution::kCudnn};

class CudaModel : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda_backend_unavailable(0);
    if (!why.empty()) GTEST_SKIP() << "no GPU: " << why;
    gpu_ = make_cuda_backend(0);
  }
  CpuBackend cpu_{1};
  std::unique_ptr<Backend> gpu_;
};

TEST_F(CudaModel, TrainsToTheCpuWeightsAndMetrics) {
  const Dataset train = quadrants(96, 1), val = quadrants(48, 2);
  ModelRun on_cpu(cpu_, train, val, 3, kSpec), on_gpu(*gpu_, train, val, 3, kSpec);
  const TrainResult c = on_cpu.trainer.run(), g = on_gpu.trainer.run();
  ASSERT_EQ(c.history.size(), g.history.size());
  for (size_t e = 0; e < c.history.size(); ++e) {
    EXPECT_NEAR(g.history[e].train_loss, c.history[e].train_loss, 2e-3) << "epoch " << e;
    EXPECT_NEAR(g.history[e].val_loss, c.history[e].val_loss, 2e-3) << "epoch " << e;
  }
  EXPECT_LT(max_abs_diff(on_gpu.model->parameters().values_to_host(),
                         on_cpu.model->parameters().values_to_host()),
            2e-3);
  EXPECT_LT(max_abs_diff(on_gpu.model->parameters().buffer_values_to_host(),
                         on_cpu.model->parameters().buffer_values_to_host()),
            2e-3);
}

// A regression (mean squared error of standardized targets, RMSE and MAE) and a binary task (AUC)
// on the GPU give the CPU's metrics.
TEST_F(CudaModel, RegressionAndBinaryTasksTrainToTheCpuMetrics) {
  // The quadrant images' class as a target in large units, and a binary label from it.
  auto as_targets = [](const Dataset& d) {
    std::vector<float> y;
    for (int32_t label : d.labels()) y.push_back(100.0f * static_cast<float>(label) + 1000.0f);
    return Dataset::regression(d.sample_shape(), {d.features().begin(), d.features().end()},
                               std::move(y), 1);
  };
  auto as_binary = [](const Dataset& d) {
    std::vector<int32_t> y;
    for (int32_t label : d.labels()) y.push_back(label >= 2 ? 1 : 0);
    return Dataset(d.sample_shape(), {d.features().begin(), d.features().end()}, std::move(y), 2);
  };
  const Dataset images = quadrants(96, 1), val_images = quadrants(48, 2);
  constexpr const char* kHead = R"({"input": [1, 8, 8], "layers": [
      {"type": "flatten"}, {"type": "linear", "out": 16}, {"type": "relu"},
      {"type": "linear", "out": %d}]})";
  for (const Task task : {Task::kRegression, Task::kBinary}) {
    const bool regression = task == Task::kRegression;
    const Dataset train = regression ? as_targets(images) : as_binary(images);
    const Dataset val = regression ? as_targets(val_images) : as_binary(val_images);
    char spec_json[512];
    std::snprintf(spec_json, sizeof spec_json, kHead, regression ? 1 : 2);
    const ModelSpec spec = parse_model_spec(spec_json);
    TrainerOptions options{.task = task, .epochs = 3, .batch_size = 16, .seed = 4};
    if (regression) options.target_scaling = TargetScaling::fit(train);
    std::vector<EpochMetrics> metrics[2];
    Backend* backends[2] = {&cpu_, gpu_.get()};
    for (int b = 0; b < 2; ++b) {
      auto model = build_model(spec, 16, *backends[b], 3);
      Adam adam(*backends[b], static_cast<int64_t>(model->parameters().values().size()),
                AdamOptions{});
      ConstantLr lr(3e-3);
      Trainer trainer(*model, adam, lr, train, val, options);
      metrics[b] = trainer.run().history;
    }
    ASSERT_EQ(metrics[0].size(), metrics[1].size());
    for (size_t e = 0; e < metrics[0].size(); ++e) {
      const EpochMetrics &c = metrics[0][e], &g = metrics[1][e];
      EXPECT_NEAR(g.train_loss, c.train_loss, 2e-3) << task_name(task) << " epoch " << e;
      EXPECT_NEAR(g.val_loss, c.val_loss, 2e-3) << task_name(task) << " epoch " << e;
      if (regression) {
        EXPECT_NEAR(g.val_rmse, c.val_rmse, 1e-2 * c.val_rmse) << "epoch " << e;
        EXPECT_NEAR(g.val_mae, c.val_mae, 1e-2 * c.val_mae) << "epoch " << e;
      } else {
        EXPECT_NEAR(g.val_auc, c.val_auc, 2e-2) << "epoch " << e;
      }
    }
  }
}

TEST_F(CudaModel, ACheckpointMovesBetweenGpuAndCpu) {
  const Dataset train = quadrants(64, 3), val = quadrants(32, 4);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tuner-cuda-ckpt-" + std::to_string(getpid())))
          .string();
  // Two epochs on the GPU, the third on the CPU, the fourth on the GPU again.
  ModelRun first(*gpu_, train, val, 2, kSpec);
  first.trainer.run();
  save_checkpoint(path, first.trainer.checkpoint(first.spec.json));
  ModelRun second(cpu_, train, val, 3, kSpec);
  second.trainer.restore(load_checkpoint(path));
  EXPECT_EQ(second.model->parameters().values_to_host(),
            first.model->parameters().values_to_host());
  second.trainer.run();
  save_checkpoint(path, second.trainer.checkpoint(second.spec.json));
  ModelRun third(*gpu_, train, val, 4, kSpec);
  third.trainer.restore(load_checkpoint(path));
  EXPECT_EQ(third.model->parameters().values_to_host(),
            second.model->parameters().values_to_host());
  const TrainResult r = third.trainer.run();
  ASSERT_EQ(r.history.size(), 1u);
  EXPECT_TRUE(std::isfinite(r.history[0].train_loss));
  std::filesystem::remove(path);
}

// Mixed precision trains as well as fp32 (model_run_testing.h).
TEST_F(CudaModel, Bf16MlpTrainsToTheFp32Loss) {
  std::unique_ptr<Backend> bf16 = make_cuda_backend(0, {.matmul = Precision::kBfloat16});
  ASSERT_EQ(bf16->name(), "cuda-bf16");
  expect_bf16_trains_to_fp32_loss(*gpu_, *bf16, kBf16MlpSpec);
}

// cuDNN's convolutions train to the CPU's losses and weights, and to the same bits twice (its
// deterministic algorithms only); 100 samples in batches of 16 end on a short batch.
TEST_F(CudaModel, CudnnCnnTrainsToTheCpuWeightsAndLossesReproducibly) {
  const std::string why = cudnn_unavailable(0);
  if (!why.empty()) GTEST_SKIP() << "no cuDNN: " << why;
  std::unique_ptr<Backend> cudnn = make_cuda_backend(0, kCudnnOptions);
  ASSERT_EQ(cudnn->name(), "cuda-cudnn");
  const Dataset train = quadrants(100, 1), val = quadrants(48, 2);
  ModelRun on_cpu(cpu_, train, val, 3, kCnnSpec), on_gpu(*cudnn, train, val, 3, kCnnSpec);
  const TrainResult c = on_cpu.trainer.run(), g = on_gpu.trainer.run();
  ASSERT_EQ(c.history.size(), g.history.size());
  for (size_t e = 0; e < c.history.size(); ++e) {
    EXPECT_NEAR(g.history[e].train_loss, c.history[e].train_loss, 2e-3) << "epoch " << e;
    EXPECT_NEAR(g.history[e].val_loss, c.history[e].val_loss, 2e-3) << "epoch " << e;
  }
  const std::vector<float> w_gpu = on_gpu.model->parameters().values_to_host();
  EXPECT_LT(max_abs_diff(w_gpu, on_cpu.model->parameters().values_to_host()), 2e-3);
  ModelRun again(*cudnn, train, val, 3, kCnnSpec);
  again.trainer.run();
  EXPECT_EQ(again.model->parameters().values_to_host(), w_gpu) << "a second run changed bits";
}

// Refused on every machine, before any device is looked at: cuDNN's legacy API gives bf16
// outputs for bf16 inputs.
TEST(CudnnOptions, Bf16ProductsAreRefused) {
  const CudaBackendOptions bf16{.matmul = Precision::kBfloat16, .convolution = Convolution::kCudnn};
  EXPECT_NE(cuda_options_invalid(bf16), "");
  EXPECT_EQ(cuda_options_invalid(kCudnnOptions), "");
  EXPECT_EQ(cuda_options_invalid({.matmul = Precision::kBfloat16}), "");
  EXPECT_THROW(make_cuda_backend(0, bf16), std::invalid_argument);
}

// Data parallelism on GPUs: one NCCL rank per visible GPU (one, on a one-GPU machine) ends
// with the weights of the plain run, within float tolerance.
TEST_F(CudaModel, NcclRanksMatchThePlainRun) {
  const Dataset train = quadrants(64, 5), val = quadrants(32, 6);
  ModelRun plain(*gpu_, train, val, 2, kSpec);
  plain.trainer.run();
  const NcclDevices devices = nccl_visible_devices();
  const int world = devices.count;
  const std::string id = nccl_new_unique_id();
  std::vector<std::vector<float>> weights(static_cast<size_t>(world));
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      try {
        std::unique_ptr<Backend> backend = r == 0 ? nullptr : make_cuda_backend(r);
        Backend& b = r == 0 ? *gpu_ : *backend;
        NcclCommunicator comm(r, world, id, r, std::chrono::seconds(60));
        comm.set_producer_stream(cuda_stream_of(b));
        const ModelSpec spec = parse_model_spec(kSpec);
        auto model = build_model(spec, 16, b, 3);
        Adam adam(b, static_cast<int64_t>(model->parameters().values().size()), AdamOptions{});
        ConstantLr lr(3e-3);
        TrainerOptions options{.epochs = 2, .batch_size = 16, .seed = 4};
        options.communicator = &comm;
        Trainer trainer(*model, adam, lr, train, val, options);
        trainer.run();
        weights[static_cast<size_t>(r)] = model->parameters().values_to_host();
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    // Batch norm and dropout see each rank's rows, so only one rank is the plain run exactly.
    if (world == 1) {
      EXPECT_LT(max_abs_diff(weights[0], plain.model->parameters().values_to_host()), 1e-5);
    }
    EXPECT_EQ(weights[static_cast<size_t>(r)], weights[0]) << "rank " << r;
  }
}

}  // namespace
}  // namespace tuner::training
