// The trainer's tasks: regression (mean squared error; RMSE and MAE) and binary classification
// (accuracy and ROC AUC), and the task, data and model that must agree.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/model_spec.h"
#include "training/optim/adam.h"
#include "training/roc_auc.h"
#include "training/trainer.h"

namespace tuner::training {
namespace {

// n samples [2] ~ N(0, 1) with T = 2 targets: 3 x0 - 2 x1 + 1 and x0 + x1, plus noise of
// standard deviation 0.1.
Dataset linear_targets(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x, y;
  for (int64_t i = 0; i < n; ++i) {
    const float a = rng.normal(), b = rng.normal();
    x.insert(x.end(), {a, b});
    y.push_back(3 * a - 2 * b + 1 + 0.1f * rng.normal());
    y.push_back(a + b + 0.1f * rng.normal());
  }
  return Dataset::regression(Shape{2}, std::move(x), std::move(y), 2);
}

// n samples [3] of 2 classes, Gaussian blobs whose means differ by 2.5 in each feature.
Dataset two_blobs(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t c = static_cast<int32_t>(rng.next_u64() % 2);
    for (int f = 0; f < 3; ++f) x.push_back(2.5f * (static_cast<float>(c) - 0.5f) + rng.normal());
    y.push_back(c);
  }
  return Dataset(Shape{3}, std::move(x), std::move(y), 2);
}

double stddev(std::span<const float> v) {
  double sum = 0, sq = 0;
  for (float f : v) sum += f, sq += static_cast<double>(f) * f;
  const double mean = sum / static_cast<double>(v.size());
  return std::sqrt(sq / static_cast<double>(v.size()) - mean * mean);
}

struct TaskRun {
  TaskRun(const std::string& spec, const Dataset& train, const Dataset& val, TrainerOptions options)
      : backend(2),
        model(build_model(parse_model_spec(spec), 32, backend, 1)),
        adam(backend, static_cast<int64_t>(model->parameters().values().size()), AdamOptions{}),
        schedule(1e-2),
        trainer(*model, adam, schedule, train, val, options) {}
  CpuBackend backend;
  std::unique_ptr<Sequential> model;
  Adam adam;
  ConstantLr schedule;
  Trainer trainer;
};

constexpr const char* kRegressionSpec = R"({"input": [2], "layers": [
    {"type": "linear", "out": 16}, {"type": "relu"}, {"type": "linear", "out": 2}]})";

TEST(TrainerTasks, RegressionLearnsTheTargetsWithMeanSquaredError) {
  const Dataset train = linear_targets(512, 1), val = linear_targets(256, 2);
  TaskRun run(kRegressionSpec, train, val,
              {.task = Task::kRegression, .epochs = 30, .batch_size = 32, .seed = 3});
  const TrainResult r = run.trainer.run();
  ASSERT_EQ(r.history.size(), 30u);
  const EpochMetrics& last = r.history.back();
  EXPECT_LT(last.train_loss, r.history.front().train_loss);
  EXPECT_LT(last.val_rmse, 0.1 * stddev(val.targets()));
  EXPECT_DOUBLE_EQ(last.val_rmse, std::sqrt(last.val_loss));
  EXPECT_GT(last.val_mae, 0.0);
  EXPECT_LE(last.val_mae, last.val_rmse);
  EXPECT_TRUE(std::isnan(last.val_accuracy));
  EXPECT_TRUE(std::isnan(last.val_auc));
  // evaluate() measures the validation split as the epoch did; by hand, from the outputs:
  const EvalResult v = run.trainer.evaluate(val);
  EXPECT_EQ(v.rmse, last.val_rmse);
  EXPECT_EQ(v.mae, last.val_mae);
  double squared = 0, absolute = 0;
  for (int64_t i = 0; i < val.size(); ++i) {
    const Tensor x = Tensor::borrow_const(val.sample(i).data(), Shape{1, 2});
    const Tensor& out = run.model->forward(x, Mode::kEval);
    for (int64_t t = 0; t < 2; ++t) {
      const double e = static_cast<double>(out.data()[t]) - val.target(i)[t];
      squared += e * e;
      absolute += std::abs(e);
    }
  }
  EXPECT_NEAR(v.rmse, std::sqrt(squared / 512.0), 1e-5);
  EXPECT_NEAR(v.mae, absolute / 512.0, 1e-5);
}

TEST(TrainerTasks, RegressionOfStandardizedTargetsReportsErrorsInTheTargetsUnits) {
  // The targets in large units: y * 100 + 5000.
  auto large = [](const Dataset& d) {
    std::vector<float> y(d.targets().begin(), d.targets().end());
    for (float& v : y) v = 100 * v + 5000;
    return Dataset::regression(d.sample_shape(), {d.features().begin(), d.features().end()},
                               std::move(y), d.num_targets());
  };
  const Dataset train = large(linear_targets(512, 1)), val = large(linear_targets(256, 2));
  const TargetScaling scaling = TargetScaling::fit(train);
  ASSERT_EQ(scaling.mean.size(), 2u);
  EXPECT_NEAR(scaling.mean[0], 5100, 40);
  TaskRun run(kRegressionSpec, train, val,
              {.task = Task::kRegression,
               .epochs = 30,
               .batch_size = 32,
               .seed = 3,
               .target_scaling = scaling});
  const EpochMetrics last = run.trainer.run().history.back();
  EXPECT_LT(last.val_rmse, 0.1 * stddev(val.targets()));
  EXPECT_GT(last.val_rmse, 1.0);   // the targets' units, not the standardized ones
  EXPECT_LT(last.val_loss, 0.05);  // of the standardized targets
  // By hand: the outputs unscaled, against the targets.
  double squared = 0, absolute = 0;
  for (int64_t i = 0; i < val.size(); ++i) {
    const Tensor x = Tensor::borrow_const(val.sample(i).data(), Shape{1, 2});
    const Tensor& out = run.model->forward(x, Mode::kEval);
    for (int64_t t = 0; t < 2; ++t) {
      const double y = out.data()[t] * scaling.stddev[t] + scaling.mean[t];
      squared += (y - val.target(i)[t]) * (y - val.target(i)[t]);
      absolute += std::abs(y - val.target(i)[t]);
    }
  }
  EXPECT_NEAR(last.val_rmse, std::sqrt(squared / 512.0), 1e-3 * last.val_rmse);
  EXPECT_NEAR(last.val_mae, absolute / 512.0, 1e-3 * last.val_mae);
}

TEST(TrainerTasks, BinaryReportsTheAucOfTheValidationSplit) {
  const Dataset train = two_blobs(256, 1), val = two_blobs(200, 2);
  TaskRun run(R"({"input": [3], "layers": [{"type": "linear", "out": 2}]})", train, val,
              {.task = Task::kBinary, .epochs = 20, .batch_size = 32, .seed = 3});
  const TrainResult r = run.trainer.run();
  const EpochMetrics& last = r.history.back();
  EXPECT_GT(last.val_auc, 0.95);
  EXPECT_GT(last.val_accuracy, 0.9);
  EXPECT_TRUE(std::isnan(last.val_rmse));
  // The AUC of logit 1 - logit 0, as roc_auc ranks them.
  std::vector<float> scores;
  for (int64_t i = 0; i < val.size(); ++i) {
    const Tensor x = Tensor::borrow_const(val.sample(i).data(), Shape{1, 3});
    const Tensor& out = run.model->forward(x, Mode::kEval);
    scores.push_back(out.data()[1] - out.data()[0]);
  }
  EXPECT_DOUBLE_EQ(last.val_auc, roc_auc(scores, val.labels()));
}

TEST(TrainerTasks, TheTaskTheDataAndTheModelMustAgree) {
  const Dataset targets = linear_targets(64, 1), classes = two_blobs(64, 1);
  auto refused = [](const std::string& spec, const Dataset& data, Task task) -> std::string {
    try {
      TaskRun run(spec, data, Dataset(), {.task = task, .epochs = 1, .batch_size = 8});
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string three_in = R"({"input": [3], "layers": [{"type": "linear", "out": 2}]})";
  EXPECT_EQ(refused(kRegressionSpec, targets, Task::kClassification),
            "trainer: the task is classification but the training split has float targets");
  EXPECT_EQ(refused(three_in, classes, Task::kRegression),
            "trainer: the task is regression but the training split has class labels");
  EXPECT_EQ(refused(R"({"input": [2], "layers": [{"type": "linear", "out": 1}]})", targets,
                    Task::kRegression),
            "trainer: the training split has 2 target(s) but the model outputs [1] (a regression "
            "needs [2])");
  EXPECT_EQ(refused(R"({"input": [3], "layers": [{"type": "linear", "out": 3}]})", classes,
                    Task::kBinary),
            "trainer: the task is binary but the training split has 2 classes and the model "
            "outputs [3] (a binary classifier has 2 classes and outputs [2])");
}

}  // namespace
}  // namespace tuner::training
