// A residual block: y = body(x) + shortcut(x), the shortcut the identity or a projection.
#ifndef TUNER_TRAINING_LAYERS_RESIDUAL_H_
#define TUNER_TRAINING_LAYERS_RESIDUAL_H_

#include <memory>
#include <vector>

#include "training/layer.h"
#include "training/layer_chain.h"

namespace tuner::training {

// y[B, out...] = body(x) + shortcut(x) with x[B, in...]. With an empty shortcut the identity is
// used and the body must keep the shape; otherwise the shortcut (e.g. a 1x1 strided conv and a
// batch norm) must produce the body's output shape. A ResNet basic block is
// Residual({conv3x3, bn, relu, conv3x3, bn}, {}) followed by a ReLU layer.
// Parameters: the body's, then the shortcut's, named "body.<i>.<kind>.<name>" and "shortcut...".
class Residual final : public Layer {
 public:
  // REQUIRES: body non-empty; no null layer (else std::invalid_argument).
  Residual(std::vector<std::unique_ptr<Layer>> body, std::vector<std::unique_ptr<Layer>> shortcut);

  std::string_view kind() const override { return "residual"; }
  std::string describe() const override;
  Shape output_shape(const Shape& sample_in) const override;
  // The body's, the shortcut's and the sum's.
  int64_t forward_flops(const Shape& sample_in) const override;
  std::vector<ParamSpec> parameter_specs() const override;
  std::vector<BufferSpec> buffer_specs() const override;
  void bind(std::span<ParamView> params, std::span<Tensor> buffers) override;
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;
  void for_each_sublayer(const std::function<void(Layer&)>& f) override;

 private:
  LayerChain body_, shortcut_;
  Shape sample_in_, sample_out_;
  int64_t max_batch_ = 0;
  Tensor body_out_;      // [max_batch, out...]
  Tensor shortcut_out_;  // [max_batch, out...] when the shortcut is a projection
  Tensor dx_body_;       // [max_batch, in...]
  Tensor dx_shortcut_;   // [max_batch, in...] when the shortcut is a projection
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_RESIDUAL_H_
