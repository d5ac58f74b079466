// Element-wise activation layers: ReLU, GELU (exact, erf), Tanh, Sigmoid.
#ifndef TUNER_TRAINING_LAYERS_ACTIVATION_H_
#define TUNER_TRAINING_LAYERS_ACTIVATION_H_

#include <memory>

#include "training/layer.h"

namespace tuner::training {

// y = act(x) for any sample shape; no parameters.
class ActivationLayer final : public Layer {
 public:
  // REQUIRES: act != kNone.
  explicit ActivationLayer(Activation act);

  std::string_view kind() const override { return activation_name(act_); }
  Activation activation() const { return act_; }
  std::string describe() const override { return std::string(kind()); }
  Shape output_shape(const Shape& sample_in) const override { return sample_in; }
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;

 private:
  const Activation act_;
  Shape sample_;
  int64_t max_batch_ = 0;
};

std::unique_ptr<Layer> make_relu();
std::unique_ptr<Layer> make_gelu();
std::unique_ptr<Layer> make_tanh();
std::unique_ptr<Layer> make_sigmoid();

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_ACTIVATION_H_
