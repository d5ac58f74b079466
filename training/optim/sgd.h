// Stochastic gradient descent with momentum, Nesterov momentum and L2 weight decay.
#ifndef TUNER_TRAINING_OPTIM_SGD_H_
#define TUNER_TRAINING_OPTIM_SGD_H_

#include <vector>

#include "training/backend.h"
#include "training/optim/optimizer.h"

namespace tuner::training {

struct SgdOptions {
  float momentum = 0.0f;  // 0 disables the velocity buffer
  float dampening = 0.0f;
  float weight_decay = 0.0f;  // L2 penalty, added to the gradient
  bool nesterov = false;      // REQUIRES: momentum > 0 and dampening == 0
};

// torch.optim.SGD: g = grad + wd * p; v = g on the first step, else momentum * v +
// (1 - dampening) * g; p -= lr * (nesterov ? g + momentum * v : v).
class Sgd final : public Optimizer {
 public:
  // `backend` must outlive the optimizer. Throws std::invalid_argument on bad options.
  Sgd(Backend& backend, int64_t size, SgdOptions options);

  std::string describe() const override;
  void step(std::span<float> params, std::span<const float> grads, float lr) override;
  std::span<float> state() override {
    return velocity_.empty() ? std::span<float>() : velocity_.span();
  }

 private:
  Backend& backend_;
  const int64_t size_;
  const SgdOptions options_;
  Tensor velocity_;  // [size] in backend memory when momentum > 0, else empty
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_OPTIM_SGD_H_
