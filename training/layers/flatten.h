// Flatten: [B, C, H, W] (or any sample shape) -> [B, C*H*W].
#ifndef TUNER_TRAINING_LAYERS_FLATTEN_H_
#define TUNER_TRAINING_LAYERS_FLATTEN_H_

#include "training/layer.h"

namespace tuner::training {

// y[B, N] with N the number of elements of a sample; a copy in the same memory order.
class Flatten final : public Layer {
 public:
  std::string_view kind() const override { return "flatten"; }
  std::string describe() const override { return "flatten"; }
  Shape output_shape(const Shape& sample_in) const override { return Shape{sample_in.numel()}; }
  int64_t forward_flops(const Shape&) const override { return 0; }  // a view
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;

 private:
  Shape sample_;
  int64_t max_batch_ = 0;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_FLATTEN_H_
