// Whole-model helpers for the backends' tests (header-only; tests include it): one training run
// of a model spec on a backend, and the check that bf16 mixed precision trains as fp32 does.
#ifndef TUNER_TRAINING_BACKENDS_MODEL_RUN_TESTING_H_
#define TUNER_TRAINING_BACKENDS_MODEL_RUN_TESTING_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "training/backend.h"
#include "training/model_spec.h"
#include "training/optim/adam.h"
#include "training/optim/lr_schedule.h"
#include "training/test_datasets.h"
#include "training/trainer.h"

namespace tuner::training {

// Adam at 3e-3, batches of 16, fixed seeds: the same spec on two backends starts from the same
// weights and sees the same batches.
struct ModelRun {
  ModelRun(Backend& b, const Dataset& train, const Dataset& val, int64_t epochs,
           const char* spec_json)
      : backend(b),
        spec(parse_model_spec(spec_json)),
        model(build_model(spec, 16, backend, 3)),
        adam(backend, static_cast<int64_t>(model->parameters().values().size()), AdamOptions{}),
        lr(3e-3),
        trainer(*model, adam, lr, train, val, {.epochs = epochs, .batch_size = 16, .seed = 4}) {}
  Backend& backend;
  ModelSpec spec;
  std::unique_ptr<Sequential> model;
  Adam adam;
  ConstantLr lr;
  Trainer trainer;
};

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return worst;
}

// A plain MLP: its GEMMs are all that bf16 mode changes (no dropout, no normalization).
constexpr const char* kBf16MlpSpec = R"({"input": [1, 8, 8], "layers": [
    {"type": "flatten"}, {"type": "linear", "out": 64}, {"type": "relu"},
    {"type": "linear", "out": 32}, {"type": "relu"}, {"type": "linear", "out": 4}]})";

// Mixed precision (bf16 GEMM inputs, fp32 everything else) trains as well as fp32: the loss of
// every epoch within 5% (+0.01 absolute, for small losses) of the fp32 run's, from the same
// seeds; and it is really another path (other weights) that is deterministic (same bits twice).
inline void expect_bf16_trains_to_fp32_loss(Backend& fp32, Backend& bf16, const char* spec) {
  const Dataset train = quadrant_images(512, 7), val = quadrant_images(256, 8);
  ModelRun fp32_run(fp32, train, val, 4, spec), bf16_run(bf16, train, val, 4, spec);
  const TrainResult f = fp32_run.trainer.run(), m = bf16_run.trainer.run();
  ASSERT_EQ(f.history.size(), 4u);
  ASSERT_EQ(m.history.size(), f.history.size());
  EXPECT_LT(m.history.back().train_loss, 0.7 * m.history.front().train_loss)
      << "bf16 training did not learn";
  for (size_t e = 0; e < f.history.size(); ++e) {
    const double train_tol = 0.05 * f.history[e].train_loss + 0.01;
    const double val_tol = 0.05 * f.history[e].val_loss + 0.01;
    EXPECT_NEAR(m.history[e].train_loss, f.history[e].train_loss, train_tol)
        << "epoch " << e << ": bf16 train loss vs fp32's";
    EXPECT_NEAR(m.history[e].val_loss, f.history[e].val_loss, val_tol)
        << "epoch " << e << ": bf16 val loss vs fp32's";
  }
  const std::vector<float> w16 = bf16_run.model->parameters().values_to_host();
  EXPECT_GT(max_abs_diff(w16, fp32_run.model->parameters().values_to_host()), 0.0)
      << "bf16 weights are bit-identical to fp32's: the bf16 products did not run";
  ModelRun again(bf16, train, val, 4, spec);
  again.trainer.run();
  EXPECT_EQ(again.model->parameters().values_to_host(), w16)
      << "bf16 training is not deterministic";
}

}  // namespace tuner::training

#endif  // TUNER_TRAINING_BACKENDS_MODEL_RUN_TESTING_H_
