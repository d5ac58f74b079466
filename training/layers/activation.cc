#include "training/layers/activation.h"

#include <stdexcept>

namespace tuner::training {

ActivationLayer::ActivationLayer(Activation act) : act_(act) {
  if (act == Activation::kNone) throw std::invalid_argument("activation layer: none");
}

void ActivationLayer::setup(const Shape& sample_in, int64_t max_batch, Backend& /*backend*/) {
  sample_ = sample_in;
  max_batch_ = max_batch;
}

void ActivationLayer::forward(Pass& pass, const Tensor& x, Tensor& y) {
  const std::string op = std::string(kind()) + ".forward";
  check_batched(op, "x", x, sample_, max_batch_);
  check_shape(op, "y", y, x.shape());
  pass.backend.activation_forward(act_, x, y);
}

void ActivationLayer::backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                               Tensor* dx) {
  if (dx == nullptr) return;
  const std::string op = std::string(kind()) + ".backward";
  check_batched(op, "x", x, sample_, max_batch_);
  check_shape(op, "y", y, x.shape());
  check_shape(op, "dy", dy, x.shape());
  check_shape(op, "dx", *dx, x.shape());
  pass.backend.activation_backward(act_, x, y, dy, *dx);
}

std::unique_ptr<Layer> make_relu() { return std::make_unique<ActivationLayer>(Activation::kRelu); }
std::unique_ptr<Layer> make_gelu() { return std::make_unique<ActivationLayer>(Activation::kGelu); }
std::unique_ptr<Layer> make_tanh() { return std::make_unique<ActivationLayer>(Activation::kTanh); }
std::unique_ptr<Layer> make_sigmoid() {
  return std::make_unique<ActivationLayer>(Activation::kSigmoid);
}

}  // namespace tuner::training
