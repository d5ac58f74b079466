// 2-D convolution over NCHW input (im2col + GEMM), with an optional fused activation.
#ifndef TUNER_TRAINING_LAYERS_CONV2D_H_
#define TUNER_TRAINING_LAYERS_CONV2D_H_

#include <vector>

#include "training/layer.h"
#include "training/layers/max_pool2d.h"

namespace tuner::training {

// y[B,O,OH,OW] = act(conv(x[B,C,H,W], W[O,C,K,K]) + b[O]), OH = (H + 2*padding - K)/stride + 1.
// Parameters: "weight" [O,C,K,K] (He uniform, fan_in C*K*K), "bias" [O] (zeros).
class Conv2d final : public Layer {
 public:
  struct Options {
    int64_t stride = 1;
    int64_t padding = 0;
    bool bias = true;
    Activation activation = Activation::kNone;  // REQUIRES: fusable
  };
  // REQUIRES: channels, kernel, stride >= 1, padding >= 0 (else std::invalid_argument).
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Options options);
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel)
      : Conv2d(in_channels, out_channels, kernel, {}) {}

  std::string_view kind() const override { return "conv2d"; }
  std::string describe() const override;
  Shape output_shape(const Shape& sample_in) const override;  // [C,H,W] -> [O,OH,OW]
  int64_t forward_flops(const Shape& sample_in) const override;
  std::vector<ParamSpec> parameter_specs() const override;
  void bind(std::span<ParamView> params, std::span<Tensor> buffers) override;
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;

  // ---- A following 2x2 max pooling fused in (LayerChain's choice) ----
  // True when `pool` (the next layer) is a 2x2, stride 2, unpadded max pooling, which
  // Backend::conv2d_pool_* can run with this convolution as one op.
  static bool can_fuse(const MaxPool2d& pool);
  // From now on this layer is set up for forward_pooled / backward_pooled (the pooled output,
  // without storing the convolution's own) instead of forward / backward.
  // REQUIRES: called before setup(); the next layer passes can_fuse.
  void fuse_max_pool() { max_pool_fused_ = true; }
  bool max_pool_fused() const { return max_pool_fused_; }
  // x[B,C,H,W] -> y[B,O,OH/2,OW/2]: the output of the next layer (the fused pooling).
  void forward_pooled(Pass& pass, const Tensor& x, Tensor& y);
  // dy[B,O,OH/2,OW/2] (the gradient of the pooling's output) -> dx (skipped when nullptr) and
  // the parameters' gradients, after forward_pooled with the same x and y.
  void backward_pooled(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx);

 private:
  void check_workspace(const char* op, const Backend& backend) const;

  const int64_t in_, out_, kernel_;
  const Options options_;
  const Window2d window_;
  ParamView weight_, bias_;
  Shape sample_in_, sample_out_;
  int64_t max_batch_ = 0;
  bool max_pool_fused_ = false;
  Shape pooled_out_;  // [O, OH/2, OW/2] when max_pool_fused_
  Tensor col_;        // [max_batch, C*K*K, OH*OW], kept from forward for backward (not pooled)
  Tensor dz_;         // [max_batch, O, OH, OW] when an activation is fused (not pooled)
  Tensor argmax_;     // int32 [max_batch * O * OH/2 * OW/2] when pooled, from forward
  Tensor work_;       // the backend's workspace (backward's, or the pooled pair's), flat
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_CONV2D_H_
