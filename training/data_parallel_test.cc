// Data parallelism (TrainerOptions::communicator): N Gloo ranks, each a thread with its own
// backend, model and trainer, end with the weights and metrics of one process that trains on
// the whole batch, to float tolerance.
//
// Batch norm and dropout are left out of the models: a rank normalizes and masks its own rows
// (as PyTorch's DDP without SyncBatchNorm does), which one process over the whole batch does not.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/distributed/gloo_communicator.h"
#include "training/model_spec.h"
#include "training/optim/adam.h"
#include "training/optim/lr_schedule.h"
#include "training/rng.h"
#include "training/trainer.h"

namespace tuner::training {
namespace {

// n samples [1, 6, 6] of 3 classes: class c brightens row band c, plus noise.
Dataset bands(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(n * 36));
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t c = static_cast<int32_t>(rng.next_u64() % 3);
    y[static_cast<size_t>(i)] = c;
    for (int64_t p = 0; p < 36; ++p) {
      x[static_cast<size_t>(i * 36 + p)] = (p / 12 == c ? 0.7f : 0.0f) + 0.4f * rng.normal();
    }
  }
  return Dataset(Shape{1, 6, 6}, std::move(x), std::move(y), 3);
}

constexpr const char* kCnn = R"({"input": [1, 6, 6], "layers": [
    {"type": "conv2d", "out": 4, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2}, {"type": "flatten"},
    {"type": "linear", "out": 12}, {"type": "tanh"},
    {"type": "residual", "body": [{"type": "linear", "out": 12}, {"type": "relu"}]},
    {"type": "linear", "out": 3}]})";

struct Outcome {
  std::vector<float> weights;
  std::vector<EpochMetrics> history;
};

// One rank's run (the whole run when comm is null). The model seed differs per rank on purpose:
// the trainer must start every rank from rank 0's weights.
Outcome train(const Dataset& data, const Dataset& val, Communicator* comm, int64_t bucket_bytes) {
  CpuBackend backend(1);
  const uint64_t model_seed = comm == nullptr ? 1 : 1 + static_cast<uint64_t>(comm->rank());
  auto model = build_model(parse_model_spec(kCnn), 16, backend, model_seed);
  Adam adam(backend, static_cast<int64_t>(model->parameters().values().size()), AdamOptions{});
  ConstantLr lr(5e-3);
  TrainerOptions options{.epochs = 3, .batch_size = 14, .seed = 5};
  options.communicator = comm;
  options.bucket_bytes = bucket_bytes;
  Trainer trainer(*model, adam, lr, data, val, options);
  Outcome out;
  out.history = trainer.run().history;
  out.weights = model->parameters().values_to_host();
  return out;
}

std::filesystem::path fresh_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "tuner-ddp-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::vector<Outcome> train_ranks(int world, const Dataset& data, const Dataset& val,
                                 int64_t bucket_bytes) {
  const std::filesystem::path dir = fresh_dir();
  std::vector<Outcome> outcomes(static_cast<size_t>(world));
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      try {
        GlooCommunicator comm(r, world, dir / "rendezvous");
        outcomes[static_cast<size_t>(r)] = train(data, val, &comm, bucket_bytes);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  std::filesystem::remove_all(dir);
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  }
  return outcomes;
}

class DataParallelRanks : public ::testing::TestWithParam<int> {};

TEST_P(DataParallelRanks, RanksEndWithTheWeightsOfOneProcessOnTheWholeBatch) {
  const int world = GetParam();
  // 47 samples in batches of 14: the last batch has 5 rows, fewer than 4 ranks can split evenly.
  const Dataset data = bands(47, 1), val = bands(20, 2);
  const Outcome single = train(data, val, nullptr, 0);
  // Tiny buckets: many all-reduces, started while the backward pass runs.
  const std::vector<Outcome> ranks = train_ranks(world, data, val, 64);
  ASSERT_EQ(ranks.size(), static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    const Outcome& got = ranks[static_cast<size_t>(r)];
    ASSERT_EQ(got.weights.size(), single.weights.size());
    // Every rank holds the same bits: the same all-reduced gradients went into the same steps.
    EXPECT_EQ(got.weights, ranks[0].weights) << "rank " << r;
    double worst = 0.0;
    for (size_t i = 0; i < got.weights.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::fabs(got.weights[i] - single.weights[i])));
    }
    EXPECT_LT(worst, 1e-5) << "rank " << r;
    ASSERT_EQ(got.history.size(), single.history.size());
    for (size_t e = 0; e < got.history.size(); ++e) {
      EXPECT_NEAR(got.history[e].train_loss, single.history[e].train_loss, 1e-4) << "epoch " << e;
      EXPECT_NEAR(got.history[e].val_loss, single.history[e].val_loss, 1e-4) << "epoch " << e;
      EXPECT_EQ(got.history[e].steps, single.history[e].steps);
    }
  }
  // Training moved the weights: the comparison above is not of two untouched models.
  EXPECT_LT(single.history.back().train_loss, single.history.front().train_loss);
}

INSTANTIATE_TEST_SUITE_P(, DataParallelRanks, ::testing::Values(2, 4),
                         [](const auto& param) { return std::to_string(param.param) + "Ranks"; });

TEST(DataParallel, OneBucketGivesTheSameWeightsAsMany) {
  const Dataset data = bands(30, 3), val;
  const std::vector<Outcome> many = train_ranks(2, data, val, 64);
  const std::vector<Outcome> one = train_ranks(2, data, val, 1 << 20);
  EXPECT_EQ(many[0].weights, one[0].weights);
}

}  // namespace
}  // namespace tuner::training
