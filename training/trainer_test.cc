// The training loop: learning, the per-epoch callback, early stopping, determinism, checkpoint
// resume, and a 1,000-image Fashion-MNIST slice.
#include "training/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/checkpoint.h"
#include "training/data/fashion_mnist.h"
#include "training/data/idx.h"
#include "training/model_spec.h"
#include "training/optim/adam.h"
#include "training/optim/sgd.h"
#include "training/test_datasets.h"

namespace tuner::training {
namespace {

Dataset quadrants(int64_t n, uint64_t seed) { return quadrant_images(n, seed); }

constexpr const char* kCnnSpec = R"({"input": [1, 8, 8], "layers": [
    {"type": "conv2d", "out": 4, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "batch_norm"}, {"type": "max_pool2d", "kernel": 2}, {"type": "flatten"},
    {"type": "dropout", "p": 0.2}, {"type": "linear", "out": 16}, {"type": "relu"},
    {"type": "residual", "body": [{"type": "linear", "out": 16}, {"type": "tanh"},
                                   {"type": "dropout", "p": 0.1}]},
    {"type": "linear", "out": 4}]})";

std::vector<float> values(Sequential& m) {
  return {m.parameters().values().begin(), m.parameters().values().end()};
}

// One model + optimizer + trainer, as a trial would set them up.
struct TrialRun {
  TrialRun(const ModelSpec& spec, const Dataset& train, const Dataset& val, TrainerOptions options,
           int threads = 2, uint64_t model_seed = 1)
      : backend(threads),
        model(build_model(spec, 32, backend, model_seed)),
        adam(backend, static_cast<int64_t>(model->parameters().values().size()), AdamOptions{}),
        schedule(1e-2, 4, 60, 1e-4),
        trainer(*model, adam, schedule, train, val, options) {}
  CpuBackend backend;
  std::unique_ptr<Sequential> model;
  Adam adam;
  CosineLr schedule;
  Trainer trainer;
};

TEST(Trainer, LearnsAndReportsEveryEpochToTheCallback) {
  const ModelSpec spec = parse_model_spec(kCnnSpec);
  const Dataset train = quadrants(256, 1), val = quadrants(128, 2);
  TrialRun run(spec, train, val, {.epochs = 4, .batch_size = 32, .seed = 3});
  std::vector<EpochMetrics> seen;
  const TrainResult r = run.trainer.run([&](const EpochMetrics& m) {
    seen.push_back(m);
    return EpochDecision::kContinue;
  });
  EXPECT_EQ(r.reason, StopReason::kCompleted);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[3].epoch, 4);
  EXPECT_EQ(seen[3].steps, 4 * 8);
  EXPECT_LT(seen[3].train_loss, seen[0].train_loss);
  EXPECT_GT(seen[3].val_accuracy, 0.9);
  EXPECT_EQ(run.trainer.evaluate(val).accuracy, seen[3].val_accuracy);
  EXPECT_EQ(run.trainer.epoch(), 4);
  EXPECT_TRUE(run.trainer.run().history.empty());  // nothing left to run
}

TEST(Trainer, CallbackStopsTheRun) {
  const ModelSpec spec = parse_model_spec(kCnnSpec);
  const Dataset train = quadrants(64, 1), val = quadrants(32, 2);
  TrialRun run(spec, train, val, {.epochs = 10, .batch_size = 16});
  const TrainResult r = run.trainer.run([](const EpochMetrics& m) {
    return m.epoch == 2 ? EpochDecision::kStop : EpochDecision::kContinue;
  });
  EXPECT_EQ(r.reason, StopReason::kCallback);
  EXPECT_EQ(r.history.size(), 2u);
  EXPECT_EQ(stop_reason_name(r.reason), "callback");
}

TEST(Trainer, EarlyStoppingWaitsForPatience) {
  const ModelSpec spec = parse_model_spec(kCnnSpec);
  // Labels of the validation split are noise: its loss stops improving quickly.
  const Dataset train = quadrants(128, 1);
  Dataset noisy = quadrants(64, 2);
  std::vector<int32_t> shuffled(noisy.labels().begin(), noisy.labels().end());
  std::rotate(shuffled.begin(), shuffled.begin() + 1, shuffled.end());
  const Dataset val(noisy.sample_shape(), {noisy.features().begin(), noisy.features().end()},
                    shuffled, 4);
  TrainerOptions options{.epochs = 40, .batch_size = 16};
  options.early_stopping = {.patience = 3, .metric = StopMetric::kValLoss};
  TrialRun run(spec, train, val, options);
  const TrainResult r = run.trainer.run();
  EXPECT_EQ(r.reason, StopReason::kEarlyStopping);
  ASSERT_LT(r.history.size(), 40u);
  EXPECT_EQ(r.best_epoch, static_cast<int64_t>(r.history.size()) - 3);
  double best = 1e9;
  for (const EpochMetrics& m : r.history) best = std::min(best, m.val_loss);
  EXPECT_EQ(r.best_value, best);
}

TEST(Trainer, RejectsDataThatDoesNotFitTheModel) {
  const ModelSpec spec = parse_model_spec(kCnnSpec);
  const Dataset train = quadrants(16, 1);
  const Dataset flat(Shape{64}, std::vector<float>(64), std::vector<int32_t>{0}, 4);
  EXPECT_THROW(TrialRun(spec, flat, Dataset(), {}), std::invalid_argument);
  EXPECT_THROW(TrialRun(spec, train, Dataset(), {.batch_size = 64}), std::invalid_argument);
  TrainerOptions es;
  es.early_stopping.patience = 2;
  EXPECT_THROW(TrialRun(spec, train, Dataset(), es), std::invalid_argument);
  const Dataset many(Shape{1, 8, 8}, std::vector<float>(64), std::vector<int32_t>{7}, 8);
  EXPECT_THROW(TrialRun(spec, many, Dataset(), {}), std::invalid_argument);
}

TEST(Trainer, SameSeedsAndThreadsGiveBitIdenticalRuns) {
  const ModelSpec spec = parse_model_spec(kCnnSpec);
  const Dataset train = quadrants(100, 1), val = quadrants(40, 2);
  auto go = [&](uint64_t data_seed) {
    TrialRun run(spec, train, val, {.epochs = 2, .batch_size = 16, .seed = data_seed});
    const TrainResult r = run.trainer.run();
    return std::make_pair(values(*run.model), r.history.back().val_loss);
  };
  const auto a = go(5), b = go(5), c = go(6);
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.second, b.second);
  EXPECT_NE(a.first, c.first);  // another data order, other weights
}

TEST(Checkpoint, SaveAtEpochKLoadAndContinueEqualsAnUninterruptedRun) {
  const ModelSpec spec = parse_model_spec(kCnnSpec);
  const Dataset train = quadrants(100, 1), val = quadrants(40, 2);
  TrainerOptions options{.epochs = 4, .batch_size = 16, .seed = 9, .clip_grad_norm = 5.0};
  options.early_stopping = {.patience = 10, .metric = StopMetric::kValAccuracy};

  TrialRun straight(spec, train, val, options);
  const TrainResult full = straight.trainer.run();
  ASSERT_EQ(full.history.size(), 4u);

  const std::string path = "/tmp/tuner_trainer_test_" + std::to_string(::getpid()) + ".ckpt";
  {
    TrialRun first(spec, train, val, options);
    first.trainer.run([](const EpochMetrics& m) {
      return m.epoch == 2 ? EpochDecision::kStop : EpochDecision::kContinue;
    });
    save_checkpoint(path, first.trainer.checkpoint(spec.json));
  }
  const Checkpoint loaded = load_checkpoint(path);
  std::remove(path.c_str());
  EXPECT_EQ(loaded.epoch, 2);
  EXPECT_EQ(loaded.dropout_calls.size(), 2u);
  EXPECT_EQ(loaded.dropout_calls[0], 2u * 7u);  // 7 batches per epoch
  // A fresh process: the model comes from the checkpoint's spec, with another seed.
  const ModelSpec spec2 = parse_model_spec(loaded.model_spec);
  TrialRun resumed(spec2, train, val, options, 2, /*model_seed=*/12345);
  resumed.trainer.restore(loaded);
  const TrainResult rest = resumed.trainer.run();
  ASSERT_EQ(rest.history.size(), 2u);
  EXPECT_EQ(values(*resumed.model), values(*straight.model));
  const ParameterArena& a = resumed.model->parameters();
  const ParameterArena& b = straight.model->parameters();
  EXPECT_TRUE(
      std::equal(a.buffer_values().begin(), a.buffer_values().end(), b.buffer_values().begin()));
  EXPECT_EQ(rest.history[1].val_loss, full.history[3].val_loss);
  EXPECT_EQ(rest.history[1].train_loss, full.history[3].train_loss);
  EXPECT_EQ(rest.best_epoch, full.best_epoch);
  EXPECT_EQ(resumed.adam.steps(), straight.adam.steps());
}

TEST(Checkpoint, RestoreRefusesAnotherModel) {
  const ModelSpec spec = parse_model_spec(kCnnSpec);
  const Dataset train = quadrants(32, 1);
  TrialRun run(spec, train, Dataset(), {.epochs = 1, .batch_size = 16});
  Checkpoint c = run.trainer.checkpoint(spec.json);
  c.parameters.pop_back();
  EXPECT_THROW(run.trainer.restore(c), CheckpointError);
}

TEST(FashionMnist, AThousandImageSliceTrainsAnMlpToASaneAccuracyInSeconds) {
  const std::string dir = fashion_mnist_dir();
  const auto start = std::chrono::steady_clock::now();
  const Dataset all =
      read_idx(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz", 1500);
  Dataset train = all.slice(0, 1000);
  Dataset held_out = all.slice(1000, 1500);
  const Normalizer norm = Normalizer::fit(train, NormalizeBy::kAll);
  norm.apply(train);
  norm.apply(held_out);
  const ModelSpec spec = parse_model_spec(R"({"input": [1, 28, 28], "layers": [
      {"type": "flatten"}, {"type": "linear", "out": 128}, {"type": "relu"},
      {"type": "linear", "out": 10}]})");
  CpuBackend backend(2);
  auto model = build_model(spec, 64, backend, 1);
  Adam adam(backend, static_cast<int64_t>(model->parameters().values().size()), AdamOptions{});
  ConstantLr lr(1e-3);
  Trainer trainer(*model, adam, lr, train, held_out, {.epochs = 8, .batch_size = 32, .seed = 1});
  const TrainResult r = trainer.run();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const EpochMetrics& last = r.history.back();
  std::printf("fashion-mnist slice: val accuracy %.3f, val loss %.3f after %zu epochs, %.2f s\n",
              last.val_accuracy, last.val_loss, r.history.size(), seconds);
  EXPECT_GT(last.val_accuracy, 0.70);
  EXPECT_LT(seconds, 20.0);
}

}  // namespace
}  // namespace tuner::training
