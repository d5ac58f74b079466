// Batch normalization over the channel dim of [B,C] or [B,C,H,W] input (BatchNorm1d / 2d).
#ifndef TUNER_TRAINING_LAYERS_BATCH_NORM_H_
#define TUNER_TRAINING_LAYERS_BATCH_NORM_H_

#include "training/layer.h"
#include "training/layers/max_pool2d.h"

namespace tuner::training {

// Train mode normalizes each channel by the batch's mean and (biased) variance over B and the
// spatial dims, and updates the running stats (running = (1 - momentum) * running + momentum *
// batch, unbiased variance, as PyTorch); eval mode normalizes by the running stats.
// Parameters: "gamma" [C] (ones), "beta" [C] (zeros). Buffers: "running_mean" [C] (0),
// "running_var" [C] (1). Backward is defined after a train-mode forward only.
class BatchNorm final : public Layer {
 public:
  // REQUIRES: channels >= 1, eps > 0, 0 <= momentum <= 1 (else std::invalid_argument).
  explicit BatchNorm(int64_t channels, float eps = 1e-5f, float momentum = 0.1f);

  std::string_view kind() const override { return "batch_norm"; }
  std::string describe() const override;
  Shape output_shape(const Shape& sample_in) const override;  // [C] or [C,H,W], unchanged
  std::vector<ParamSpec> parameter_specs() const override;
  std::vector<BufferSpec> buffer_specs() const override;
  void bind(std::span<ParamView> params, std::span<Tensor> buffers) override;
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  // Throws std::logic_error when the latest forward ran in eval mode.
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;

  // ---- A following ReLU fused in (LayerChain's choice) ----
  // From now on forward writes max(batch_norm(x), 0), the ReLU layer's output, and backward
  // takes that output as y and the ReLU's dy (Backend::batch_norm_relu_*).
  // REQUIRES: called before setup().
  void fuse_relu() { relu_fused_ = true; }
  bool relu_fused() const { return relu_fused_; }

  // ---- A 2x2 max pooling after that ReLU fused in too (LayerChain's choice) ----
  // True when `pool` (the layer after the ReLU) can run in this layer for input sample_in: a
  // 2x2, stride 2, unpadded pooling of [C, H, W] with H, W >= 2.
  static bool can_fuse(const MaxPool2d& pool, const Shape& sample_in);
  // From now on forward and backward throw; forward_pooled writes the pooling's output
  // [C, H/2, W/2] (Backend::batch_norm_relu_pool_*, in eval mode the ops in turn) and
  // backward_pooled takes it as y and the pooling's dy.
  // REQUIRES: relu_fused(), can_fuse(pool, the input sample), called before setup().
  void fuse_max_pool() { max_pool_fused_ = true; }
  bool max_pool_fused() const { return max_pool_fused_; }
  void forward_pooled(Pass& pass, const Tensor& x, Tensor& y);
  void backward_pooled(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx);

 private:
  const int64_t channels_;
  const float eps_, momentum_;
  ParamView gamma_, beta_;
  Tensor running_mean_, running_var_;
  Shape sample_;
  int64_t max_batch_ = 0;
  Mode last_mode_ = Mode::kEval;
  bool relu_fused_ = false;
  bool max_pool_fused_ = false;
  Shape pooled_;        // [C, H/2, W/2] when max_pool_fused_
  Tensor mean_, rstd_;  // [C], saved by a train-mode forward
  Tensor work_;         // the backend's workspace for the fused ReLU's (and pooling's) ops, flat
  Tensor argmax_;       // the pooling's argmax (int32 in float slots) when max_pool_fused_
  Tensor eval_out_;     // the eval forward's output before its pooling when max_pool_fused_
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_BATCH_NORM_H_
