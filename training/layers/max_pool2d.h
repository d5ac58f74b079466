// Max pooling over K x K windows of NCHW input (padding counts as -inf).
#ifndef TUNER_TRAINING_LAYERS_MAX_POOL2D_H_
#define TUNER_TRAINING_LAYERS_MAX_POOL2D_H_

#include <span>
#include <vector>

#include "training/layer.h"

namespace tuner::training {

// x[B,C,H,W] -> y[B,C,OH,OW], OH = (H + 2*padding - K)/stride + 1; no parameters.
class MaxPool2d final : public Layer {
 public:
  // REQUIRES: kernel, stride >= 1, 0 <= padding <= kernel / 2 (else std::invalid_argument).
  MaxPool2d(int64_t kernel, int64_t stride, int64_t padding = 0);
  explicit MaxPool2d(int64_t kernel) : MaxPool2d(kernel, kernel, 0) {}

  std::string_view kind() const override { return "max_pool2d"; }
  const Window2d& window() const { return window_; }
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
  std::span<int32_t> argmax(int64_t n);

  Tensor argmax_;  // int32 [max_batch * C * OH * OW] in backend memory, from forward
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_MAX_POOL2D_H_
