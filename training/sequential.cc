#include "training/sequential.h"

#include <stdexcept>

#include "training/shape_error.h"

namespace tuner::training {

Sequential::Sequential(const Shape& sample_input, std::vector<std::unique_ptr<Layer>> layers,
                       int64_t max_batch, Backend& backend, uint64_t seed)
    : backend_(backend),
      input_shape_(sample_input),
      max_batch_(max_batch),
      chain_(std::move(layers)) {
  if (chain_.size() == 0) throw std::invalid_argument("sequential: no layers");
  if (max_batch < 1) throw std::invalid_argument("sequential: max_batch must be >= 1");
  output_shape_ = chain_.output_shape(sample_input);
  arena_ =
      std::make_unique<ParameterArena>(chain_.parameter_specs(), chain_.buffer_specs(), backend);
  chain_.bind(arena_->params(), arena_->buffers());
  chain_.setup(sample_input, max_batch, backend);
  input_ = backend.allocate(sample_input.with_batch(max_batch));
  output_ = backend.allocate(output_shape_.with_batch(max_batch));
  output_grad_ = backend.allocate(output_shape_.with_batch(max_batch));
  arena_->initialize(seed);
  ready_from_.assign(chain_.size() + 1, static_cast<int64_t>(arena_->grads().size()));
  size_t param = arena_->param_specs().size();
  for (size_t i = chain_.size(); i-- > 0;) {
    const size_t n = chain_.layer(i).parameter_specs().size();
    param -= n;
    ready_from_[i] = n > 0 ? arena_->offset(param) : ready_from_[i + 1];
  }
}

const Tensor& Sequential::forward(const Tensor& x, Mode mode) {
  check_batched("sequential.forward", "x", x, input_shape_, max_batch_);
  batch_ = x.dim(0);
  mode_ = mode;
  input_view_ = input_.slice(0, batch_);
  output_view_ = output_.slice(0, batch_);
  output_grad_view_ = output_grad_.slice(0, batch_);
  backend_.upload(x.span(), input_view_.span());
  Pass pass{backend_, mode};
  chain_.forward(pass, input_view_, output_view_);
  return output_view_;
}

Tensor& Sequential::output_grad() {
  if (batch_ == 0) throw std::logic_error("sequential.output_grad: no forward yet");
  return output_grad_view_;
}

void Sequential::backward() {
  if (batch_ == 0) throw std::logic_error("sequential.backward: no forward yet");
  Pass pass{backend_, mode_};
  chain_.backward(pass, input_view_, output_view_, output_grad_view_, nullptr);
}

void Sequential::backward(const std::function<void(int64_t)>& grads_ready_from) {
  if (batch_ == 0) throw std::logic_error("sequential.backward: no forward yet");
  Pass pass{backend_, mode_};
  chain_.backward(pass, input_view_, output_view_, output_grad_view_, nullptr,
                  [&](size_t layer) { grads_ready_from(ready_from_[layer]); });
}

void Sequential::for_each_layer(const std::function<void(Layer&)>& f) {
  std::function<void(Layer&)> visit = [&](Layer& layer) {
    f(layer);
    layer.for_each_sublayer(visit);
  };
  for (size_t i = 0; i < chain_.size(); ++i) visit(chain_.layer(i));
}

std::string Sequential::describe() const {
  std::string s = "sequential(input " + input_shape_.to_string() + ", max batch " +
                  std::to_string(max_batch_) + ")\n";
  s += chain_.describe("  ");
  s += "  parameters: " + std::to_string(arena_->num_parameters()) + "\n";
  return s;
}

}  // namespace tuner::training
