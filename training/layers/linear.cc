#include "training/layers/linear.h"

#include <stdexcept>

#include "training/shape_error.h"

namespace tuner::training {

Linear::Linear(int64_t in_features, int64_t out_features, Options options)
    : in_(in_features), out_(out_features), options_(options) {
  if (in_ < 1 || out_ < 1) {
    throw std::invalid_argument("linear: features must be >= 1, got " + std::to_string(in_) +
                                " -> " + std::to_string(out_));
  }
  if (!activation_fusable(options_.activation)) {
    throw std::invalid_argument("linear: activation " +
                                std::string(activation_name(options_.activation)) +
                                " cannot be fused; use a separate activation layer");
  }
}

std::string Linear::describe() const {
  std::string s = "linear(" + std::to_string(in_) + " -> " + std::to_string(out_);
  if (!options_.bias) s += ", no bias";
  if (options_.activation != Activation::kNone) {
    s += ", " + std::string(activation_name(options_.activation));
  }
  return s + ")";
}

Shape Linear::output_shape(const Shape& sample_in) const {
  if (!(sample_in == Shape{in_})) {
    throw_shape_error("linear", "input sample shape " + sample_in.to_string() + ", expected [" +
                                    std::to_string(in_) + "]");
  }
  return Shape{out_};
}

int64_t Linear::forward_flops(const Shape& sample_in) const {
  (void)output_shape(sample_in);
  // The products, the bias and a fused activation (as its own layer would count it).
  const int64_t per_output =
      2 * in_ + (options_.bias ? 1 : 0) + (options_.activation != Activation::kNone ? 1 : 0);
  return out_ * per_output;
}

std::vector<ParamSpec> Linear::parameter_specs() const {
  std::vector<ParamSpec> specs{{"weight", Shape{out_, in_}, Init::kHeUniform, in_, out_}};
  if (options_.bias) specs.push_back({"bias", Shape{out_}, Init::kZeros, in_, out_});
  return specs;
}

void Linear::bind(std::span<ParamView> params, std::span<Tensor> buffers) {
  check_bind("linear.bind", params.size(), options_.bias ? 2 : 1, buffers.size(), 0);
  weight_ = {params[0].value.view(), params[0].grad.view()};
  if (options_.bias) bias_ = {params[1].value.view(), params[1].grad.view()};
}

void Linear::setup(const Shape& sample_in, int64_t max_batch, Backend& backend) {
  output_shape(sample_in);
  max_batch_ = max_batch;
  if (options_.activation != Activation::kNone) dz_ = backend.allocate(Shape{max_batch, out_});
}

void Linear::forward(Pass& pass, const Tensor& x, Tensor& y) {
  check_batched("linear.forward", "x", x, Shape{in_}, max_batch_);
  check_shape("linear.forward", "y", y, Shape{x.dim(0), out_});
  pass.backend.linear_forward(x, weight_.value, options_.bias ? &bias_.value : nullptr,
                              options_.activation, y);
}

void Linear::backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) {
  check_batched("linear.backward", "x", x, Shape{in_}, max_batch_);
  const int64_t batch = x.dim(0);
  check_shape("linear.backward", "y", y, Shape{batch, out_});
  check_shape("linear.backward", "dy", dy, Shape{batch, out_});
  if (dx != nullptr) check_shape("linear.backward", "dx", *dx, Shape{batch, in_});
  Tensor dz = dz_.empty() ? Tensor() : dz_.slice(0, batch);
  pass.backend.linear_backward(x, weight_.value, y, options_.activation, dy, dz, dx, weight_.grad,
                               options_.bias ? &bias_.grad : nullptr);
}

}  // namespace tuner::training
