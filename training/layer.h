// The interface of a layer: shapes, parameters, forward and backward.
//
// Life of a layer: construct it with its configuration (all sizes explicit); a container asks
// output_shape() for each sample shape (this validates the chain), collects parameter_specs()
// and buffer_specs() into one ParameterArena, bind()s the arena's views back, calls setup() once
// to pre-allocate per-batch scratch for max_batch samples, then runs forward() and backward()
// any number of times without allocating. Shapes: see the legend in training/tensor.h; "sample"
// shapes omit the batch dim B, tensors passed to forward/backward have it.
#ifndef TUNER_TRAINING_LAYER_H_
#define TUNER_TRAINING_LAYER_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "training/backend.h"
#include "training/init.h"
#include "training/tensor.h"

namespace tuner::training {

// A trainable parameter a layer declares (e.g. "weight" [O, I] initialized by He).
struct ParamSpec {
  std::string name;
  Shape shape;
  Init init = Init::kZeros;
  int64_t fan_in = 0, fan_out = 0;
};

// A non-trainable state array saved with the model (e.g. BatchNorm's running mean).
struct BufferSpec {
  std::string name;
  Shape shape;
  float initial = 0.0f;
};

// A parameter's value and gradient: views into the arena.
struct ParamView {
  Tensor value;
  Tensor grad;
};

enum class Mode { kTrain, kEval };

// What one forward or backward pass runs on.
struct Pass {
  Backend& backend;
  Mode mode = Mode::kTrain;
};

// Thread safety: a layer is used by one thread at a time.
class Layer {
 public:
  virtual ~Layer() = default;

  // Short type name, as a model spec names it ("linear", "conv2d").
  virtual std::string_view kind() const = 0;
  // One line with the configuration, e.g. "linear(784 -> 512, relu)".
  virtual std::string describe() const = 0;

  // The output sample shape for an input sample shape; throws ShapeError naming the layer when
  // the input does not fit.
  virtual Shape output_shape(const Shape& sample_in) const = 0;

  // Floating-point operations of one sample's forward pass for an input sample shape, counting
  // a multiply-add as 2 (the convention of "training FLOPs" figures): the products of linear and
  // convolution layers, one per window element for pooling, one per output element for
  // element-wise layers (the default). REQUIRES: output_shape(sample_in) does not throw.
  virtual int64_t forward_flops(const Shape& sample_in) const {
    return output_shape(sample_in).numel();
  }

  virtual std::vector<ParamSpec> parameter_specs() const { return {}; }
  virtual std::vector<BufferSpec> buffer_specs() const { return {}; }
  // Receives the arena's views, in the order of the specs. REQUIRES: the sizes match the specs.
  virtual void bind(std::span<ParamView> params, std::span<Tensor> buffers);

  // Pre-allocates scratch for up to max_batch samples of sample_in. Called once, after bind().
  // REQUIRES: output_shape(sample_in) does not throw; later passes use this backend's thread count.
  virtual void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) = 0;

  // x[B, in...] -> y[B, out...], 1 <= B <= max_batch.
  virtual void forward(Pass& pass, const Tensor& x, Tensor& y) = 0;
  // Given the x and y of the latest forward and dy[B, out...]: writes dx[B, in...] (skipped when
  // nullptr) and overwrites the gradients of this layer's parameters.
  virtual void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                        Tensor* dx) = 0;

  // Calls f on each layer directly nested in this one (a residual block's body, then its
  // shortcut), not recursively; leaf layers have none. Used to reach per-layer state such as
  // Dropout's counter for checkpoints.
  virtual void for_each_sublayer(const std::function<void(Layer&)>& f) { (void)f; }
};

// ---- Boundary checks shared by the layers; each throws ShapeError naming op and shapes. ----

// REQUIRES of t: shape [B, sample...] with 1 <= B <= max_batch, contiguous.
void check_batched(std::string_view op, std::string_view arg, const Tensor& t, const Shape& sample,
                   int64_t max_batch);
// REQUIRES of t: exactly `shape`, contiguous.
void check_shape(std::string_view op, std::string_view arg, const Tensor& t, const Shape& shape);
// REQUIRES: n specs were given for a layer that declares `expected`.
void check_bind(std::string_view op, size_t params, size_t expected_params, size_t buffers,
                size_t expected_buffers);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYER_H_
