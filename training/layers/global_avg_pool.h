// Global average pooling: the mean of each channel's plane.
#ifndef TUNER_TRAINING_LAYERS_GLOBAL_AVG_POOL_H_
#define TUNER_TRAINING_LAYERS_GLOBAL_AVG_POOL_H_

#include "training/layer.h"

namespace tuner::training {

// x[B,C,H,W] -> y[B,C]; no parameters.
class GlobalAvgPool final : public Layer {
 public:
  std::string_view kind() const override { return "global_avg_pool"; }
  std::string describe() const override { return "global_avg_pool"; }
  Shape output_shape(const Shape& sample_in) const override;  // [C,H,W] -> [C]
  int64_t forward_flops(const Shape& sample_in) const override { return sample_in.numel(); }
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;

 private:
  Shape sample_in_;
  int64_t max_batch_ = 0;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_GLOBAL_AVG_POOL_H_
