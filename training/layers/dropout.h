// Inverted dropout with a seeded, counter-based mask.
#ifndef TUNER_TRAINING_LAYERS_DROPOUT_H_
#define TUNER_TRAINING_LAYERS_DROPOUT_H_

#include "training/layer.h"

namespace tuner::training {

// Train mode: y = x * mask, mask 0 with probability p else 1/(1-p); the n-th training forward
// draws its mask from (seed, n), whatever the thread count. Eval mode: y = x. Any sample shape.
// The stream (seed, n) is the layer's only state (seed(), calls() and their setters, for
// checkpoints).
class Dropout final : public Layer {
 public:
  // REQUIRES: 0 <= p < 1 (else std::invalid_argument).
  Dropout(float p, uint64_t seed);

  std::string_view kind() const override { return "dropout"; }
  std::string describe() const override;
  Shape output_shape(const Shape& sample_in) const override { return sample_in; }
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;

  uint64_t seed() const { return seed_; }
  void set_seed(uint64_t seed) { seed_ = seed; }
  uint64_t calls() const { return calls_; }
  void set_calls(uint64_t calls) { calls_ = calls; }

 private:
  const float p_;
  uint64_t seed_;
  uint64_t calls_ = 0;
  Mode last_mode_ = Mode::kEval;
  Shape sample_;
  int64_t max_batch_ = 0;
  Tensor mask_;  // [max_batch, sample...]
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_DROPOUT_H_
