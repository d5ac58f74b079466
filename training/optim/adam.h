// Adam and AdamW.
#ifndef TUNER_TRAINING_OPTIM_ADAM_H_
#define TUNER_TRAINING_OPTIM_ADAM_H_

#include <vector>

#include "training/backend.h"
#include "training/optim/optimizer.h"

namespace tuner::training {

struct AdamOptions {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  // false: Adam's L2 (wd * p added to the gradient); true: AdamW's decoupled decay
  // (p *= 1 - lr * wd before the update).
  bool decoupled = false;
};

// torch.optim.Adam / AdamW (amsgrad off): m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
class Adam final : public Optimizer {
 public:
  // `backend` must outlive the optimizer. Throws std::invalid_argument on bad options.
  Adam(Backend& backend, int64_t size, AdamOptions options);

  std::string describe() const override;
  void step(std::span<float> params, std::span<const float> grads, float lr) override;
  std::span<float> state() override { return state_.span(); }  // m then v

 private:
  Backend& backend_;
  const int64_t size_;
  const AdamOptions options_;
  Tensor state_;  // [2 * size] in backend memory
};

// AdamW with PyTorch's default weight decay of 0.01.
AdamOptions adamw_options(float weight_decay = 0.01f);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_OPTIM_ADAM_H_
