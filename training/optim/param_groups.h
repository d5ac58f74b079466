// Per-range learning rates over the flat parameter array: PyTorch's parameter groups with an lr
// factor each, for fine-tuning (a layer trained at a tenth of the rate, or frozen).
#ifndef TUNER_TRAINING_OPTIM_PARAM_GROUPS_H_
#define TUNER_TRAINING_OPTIM_PARAM_GROUPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "training/backend.h"
#include "training/optim/adam.h"
#include "training/optim/optimizer.h"
#include "training/optim/sgd.h"

namespace tuner::training {

// The values [begin, begin + size) of the flat parameter array, trained at lr * lr_factor.
// lr_factor 0 freezes them: the step leaves them and their optimizer state untouched (no update,
// no weight decay), as PyTorch leaves a parameter with requires_grad=False.
struct ParamGroup {
  int64_t begin = 0;
  int64_t size = 0;
  float lr_factor = 1.0f;  // >= 0
};

// Adam, AdamW or SGD over the whole array, each group at its own learning rate; values outside
// every group at the base rate. The state has the layout of the plain optimizer of the same size
// (Adam: m then v; SGD: the velocity), so a checkpoint's optimizer state fits either. Values at
// factor 1 get the plain optimizer's update.
// Thread safety: one thread at a time.
class ParamGroupOptimizer final : public Optimizer {
 public:
  // `backend` must outlive the optimizer. Throws std::invalid_argument when the groups overlap,
  // leave [0, size) or have a negative factor, or on bad options (as Adam and Sgd).
  ParamGroupOptimizer(Backend& backend, int64_t size, AdamOptions options,
                      std::vector<ParamGroup> groups);
  ParamGroupOptimizer(Backend& backend, int64_t size, SgdOptions options,
                      std::vector<ParamGroup> groups);

  std::string describe() const override;
  void step(std::span<float> params, std::span<const float> grads, float lr) override;
  std::span<float> state() override { return state_.empty() ? std::span<float>() : state_.span(); }

  // The ranges the step visits, in order, covering [0, size): the groups and the base-rate
  // ranges between them.
  const std::vector<ParamGroup>& segments() const { return segments_; }

 private:
  ParamGroupOptimizer(Backend& backend, int64_t size, std::vector<ParamGroup> groups);

  Backend& backend_;
  const int64_t size_;
  bool adam_ = true;
  AdamOptions adam_options_;
  SgdOptions sgd_options_;
  std::vector<ParamGroup> segments_;
  Tensor state_;  // Adam: [2 * size]; SGD with momentum: [size]; else empty
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_OPTIM_PARAM_GROUPS_H_
