// A model: layers in sequence, their parameters in one ParameterArena, their activations
// allocated up front for a maximum batch size.
#ifndef TUNER_TRAINING_SEQUENTIAL_H_
#define TUNER_TRAINING_SEQUENTIAL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "training/backend.h"
#include "training/layer.h"
#include "training/layer_chain.h"
#include "training/parameter_arena.h"

namespace tuner::training {

// Typical step (nothing is allocated in it):
//   const Tensor& logits = model.forward(x, Mode::kTrain);          // x[B, input...]
//   float loss = ce.compute(backend, logits, labels, &model.output_grad());
//   model.backward();
//   optimizer.step(model.parameters().values(), model.parameters().grads(), lr);
// Thread safety: one thread at a time. The backend must outlive the model.
class Sequential {
 public:
  // Validates the chain of shapes (ShapeError naming the first layer that does not fit),
  // allocates the arena and every activation for max_batch samples, and initializes the
  // parameters from `seed`. REQUIRES: layers non-empty, max_batch >= 1.
  Sequential(const Shape& sample_input, std::vector<std::unique_ptr<Layer>> layers,
             int64_t max_batch, Backend& backend, uint64_t seed = 0);

  const Shape& input_shape() const { return input_shape_; }    // per sample
  const Shape& output_shape() const { return output_shape_; }  // per sample
  int64_t max_batch() const { return max_batch_; }
  size_t size() const { return chain_.size(); }
  const Layer& layer(size_t i) const { return chain_.layer(i); }
  // Calls f on every layer, nested ones included (depth first, parents before their sublayers).
  void for_each_layer(const std::function<void(Layer&)>& f);
  Backend& backend() { return backend_; }

  ParameterArena& parameters() { return *arena_; }
  const ParameterArena& parameters() const { return *arena_; }
  // Re-initializes the parameters (and buffers) from seed.
  void initialize(uint64_t seed) { arena_->initialize(seed); }

  // x[B, input...] in host memory, 1 <= B <= max_batch. Returns the output [B, output...] in
  // the backend's memory, valid until the next forward. The input is copied (uploaded), so x
  // need not outlive the call.
  const Tensor& forward(const Tensor& x, Mode mode);
  // The gradient buffer of the output for a batch of B, [B, output...], for a loss to fill.
  Tensor& output_grad();
  // Backward of the latest forward from output_grad(); overwrites every parameter gradient.
  // REQUIRES: a forward ran before (else std::logic_error).
  void backward();
  // The same, calling grads_ready_from(offset) each time every gradient at positions >= offset of
  // parameters().grads() is final (how data parallelism starts all-reducing early buckets).
  void backward(const std::function<void(int64_t)>& grads_ready_from);

  // Floating-point operations of one sample's forward pass (Layer::forward_flops).
  int64_t forward_flops() const { return chain_.forward_flops(input_shape_); }

  // The layers, one per line, with their output shapes, and the parameter count.
  std::string describe() const;

 private:
  Backend& backend_;
  const Shape input_shape_;
  const int64_t max_batch_;
  LayerChain chain_;
  Shape output_shape_;
  std::unique_ptr<ParameterArena> arena_;
  Tensor input_, output_, output_grad_;  // [max_batch, ...]
  Tensor input_view_, output_view_, output_grad_view_;
  // ready_from_[i]: the offset of the first parameter of layers i.. in the arena (its size when
  // they have none); once layer i's backward is done, the gradients from there on are final.
  std::vector<int64_t> ready_from_;
  int64_t batch_ = 0;
  Mode mode_ = Mode::kEval;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_SEQUENTIAL_H_
