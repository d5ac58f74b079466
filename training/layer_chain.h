// Layers run one after the other, with their intermediate activations pre-allocated: the body of
// Sequential and of a residual block (internal to the engine).
#ifndef TUNER_TRAINING_LAYER_CHAIN_H_
#define TUNER_TRAINING_LAYER_CHAIN_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "training/layer.h"

namespace tuner::training {

// Thread safety: one thread at a time.
class LayerChain {
 public:
  // REQUIRES: every layer non-null.
  explicit LayerChain(std::vector<std::unique_ptr<Layer>> layers);

  size_t size() const { return layers_.size(); }
  const Layer& layer(size_t i) const { return *layers_[i]; }
  Layer& layer(size_t i) { return *layers_[i]; }

  // Output sample shape of the whole chain (the input itself when empty). Throws ShapeError
  // naming the position and kind of the first layer that does not fit.
  Shape output_shape(const Shape& sample_in) const;
  // The sum of the layers' forward_flops along the chain's shapes.
  int64_t forward_flops(const Shape& sample_in) const;
  // The specs of every layer in order, names prefixed "<index>.<kind>.".
  std::vector<ParamSpec> parameter_specs() const;
  std::vector<BufferSpec> buffer_specs() const;
  void bind(std::span<ParamView> params, std::span<Tensor> buffers);
  // Calls setup on every layer and allocates the activations between layers (B = max_batch) and
  // two ping-pong gradient buffers as large as the largest of them. A conv2d followed by a 2x2,
  // stride 2 max pooling runs as one op (Conv2d::fuse_max_pool): the convolution's full output
  // is then neither stored nor passed back, and the pooling layer's own kernels do not run.
  // Likewise a batch norm followed by a ReLU runs as one op (BatchNorm::fuse_relu), and with a
  // 2x2, stride 2 max pooling after the ReLU, the three as one op (BatchNorm::fuse_max_pool).
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend);

  // x[B, in...] -> y[B, out...]; the intermediate activations are kept for backward.
  // REQUIRES: size() >= 1.
  void forward(Pass& pass, const Tensor& x, Tensor& y);
  // dx (skipped when nullptr) and every layer's parameter gradients, from dy[B, out...], after a
  // forward with the same x and y. after_layer(i), when given, runs once layer i's backward is
  // done (layers finish from the last to the first).
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const std::function<void(size_t)>& after_layer = {});

  std::string describe(const std::string& indent) const;

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Shape> shapes_;  // sample shape before layer i; shapes_[size()] is the output
  std::vector<Tensor> acts_;   // acts_[i]: output of layer i, [max_batch, shapes_[i + 1]...]
                               // (empty inside a fused group)
  std::vector<int> fused_;     // fused_[i]: how many of the layers after layer i it runs too
                               // (a max pooling after a conv2d; a ReLU, and maybe a max pooling
                               // after it, after a batch norm)
  std::vector<size_t> first_;  // first_[i]: the layer that runs layer i (i itself, or the first
                               // of its fused group)
  Tensor grad_a_, grad_b_;     // flat scratch for the gradients between layers
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYER_CHAIN_H_
