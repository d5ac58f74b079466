// Layer normalization over the last dim of each sample.
#ifndef TUNER_TRAINING_LAYERS_LAYER_NORM_H_
#define TUNER_TRAINING_LAYERS_LAYER_NORM_H_

#include "training/layer.h"

namespace tuner::training {

// x[B, ..., D] -> y of the same shape, each length-D row normalized by its own mean and (biased)
// variance, then scaled by "gamma" [D] (ones) and shifted by "beta" [D] (zeros). Same in train
// and eval mode.
class LayerNorm final : public Layer {
 public:
  // REQUIRES: features >= 1, eps > 0 (else std::invalid_argument).
  explicit LayerNorm(int64_t features, float eps = 1e-5f);

  std::string_view kind() const override { return "layer_norm"; }
  std::string describe() const override;
  Shape output_shape(const Shape& sample_in) const override;  // [..., D], unchanged
  std::vector<ParamSpec> parameter_specs() const override;
  void bind(std::span<ParamView> params, std::span<Tensor> buffers) override;
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;

 private:
  const int64_t features_;
  const float eps_;
  ParamView gamma_, beta_;
  Shape sample_;
  int64_t max_batch_ = 0;
  int64_t rows_per_sample_ = 1;
  Tensor mean_, rstd_;  // [max_batch * rows_per_sample]
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_LAYER_NORM_H_
