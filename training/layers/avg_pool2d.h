// Average pooling over K x K windows of NCHW input (padding counts as zeros, as PyTorch's
// count_include_pad=True).
#ifndef TUNER_TRAINING_LAYERS_AVG_POOL2D_H_
#define TUNER_TRAINING_LAYERS_AVG_POOL2D_H_

#include "training/layer.h"

namespace tuner::training {

// x[B,C,H,W] -> y[B,C,OH,OW], OH = (H + 2*padding - K)/stride + 1; no parameters.
class AvgPool2d final : public Layer {
 public:
  // REQUIRES: kernel, stride >= 1, 0 <= padding <= kernel / 2 (else std::invalid_argument).
  AvgPool2d(int64_t kernel, int64_t stride, int64_t padding = 0);
  explicit AvgPool2d(int64_t kernel) : AvgPool2d(kernel, kernel, 0) {}

  std::string_view kind() const override { return "avg_pool2d"; }
  std::string describe() const override;
  Shape output_shape(const Shape& sample_in) const override;  // [C,H,W] -> [C,OH,OW]
  int64_t forward_flops(const Shape& sample_in) const override {
    return output_shape(sample_in).numel() * window_.kernel_h * window_.kernel_w;
  }
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;

 private:
  const Window2d window_;
  Shape sample_in_, sample_out_;
  int64_t max_batch_ = 0;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_AVG_POOL2D_H_
