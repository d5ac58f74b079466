// Linear (fully connected) layer with an optional activation fused into the GEMM epilogue.
#ifndef TUNER_TRAINING_LAYERS_LINEAR_H_
#define TUNER_TRAINING_LAYERS_LINEAR_H_

#include "training/layer.h"

namespace tuner::training {

// y[B,O] = act(x[B,I] W[O,I]^T + b[O]). Parameters: "weight" [O,I] (He uniform), "bias" [O]
// (zeros). The fused activation must be one whose derivative follows from its output (none,
// relu, tanh, sigmoid); GELU goes in its own layer.
class Linear final : public Layer {
 public:
  struct Options {
    bool bias = true;
    Activation activation = Activation::kNone;
  };
  // REQUIRES: in_features, out_features >= 1; a fusable activation (else std::invalid_argument).
  Linear(int64_t in_features, int64_t out_features, Options options);
  Linear(int64_t in_features, int64_t out_features) : Linear(in_features, out_features, {}) {}

  std::string_view kind() const override { return "linear"; }
  std::string describe() const override;
  Shape output_shape(const Shape& sample_in) const override;  // [I] -> [O]
  int64_t forward_flops(const Shape& sample_in) const override;
  std::vector<ParamSpec> parameter_specs() const override;
  void bind(std::span<ParamView> params, std::span<Tensor> buffers) override;
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;

 private:
  // Constant after construction.
  const int64_t in_, out_;
  const Options options_;
  // Bound once.
  ParamView weight_, bias_;
  int64_t max_batch_ = 0;
  Tensor dz_;  // [max_batch, O], the gradient before the fused activation
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_LINEAR_H_
