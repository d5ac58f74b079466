#include "training/layers/layer_norm.h"

#include <cstdio>
#include <stdexcept>

#include "training/shape_error.h"

namespace tuner::training {

LayerNorm::LayerNorm(int64_t features, float eps) : features_(features), eps_(eps) {
  if (features < 1 || !(eps > 0.0f)) {
    throw std::invalid_argument("layer_norm: features >= 1 and eps > 0");
  }
}

std::string LayerNorm::describe() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "layer_norm(%lld, eps=%g)", static_cast<long long>(features_),
                static_cast<double>(eps_));
  return buf;
}

Shape LayerNorm::output_shape(const Shape& sample_in) const {
  if (sample_in.rank() < 1 || sample_in[sample_in.rank() - 1] != features_) {
    throw_shape_error("layer_norm", "input sample shape " + sample_in.to_string() +
                                        ", expected [..., " + std::to_string(features_) + "]");
  }
  return sample_in;
}

std::vector<ParamSpec> LayerNorm::parameter_specs() const {
  return {{"gamma", Shape{features_}, Init::kOnes, features_, features_},
          {"beta", Shape{features_}, Init::kZeros, features_, features_}};
}

void LayerNorm::bind(std::span<ParamView> params, std::span<Tensor> buffers) {
  check_bind("layer_norm.bind", params.size(), 2, buffers.size(), 0);
  gamma_ = {params[0].value.view(), params[0].grad.view()};
  beta_ = {params[1].value.view(), params[1].grad.view()};
}

void LayerNorm::setup(const Shape& sample_in, int64_t max_batch, Backend& backend) {
  sample_ = output_shape(sample_in);
  max_batch_ = max_batch;
  rows_per_sample_ = sample_in.numel() / features_;
  mean_ = backend.allocate(Shape{max_batch * rows_per_sample_});
  rstd_ = backend.allocate(Shape{max_batch * rows_per_sample_});
}

void LayerNorm::forward(Pass& pass, const Tensor& x, Tensor& y) {
  check_batched("layer_norm.forward", "x", x, sample_, max_batch_);
  check_shape("layer_norm.forward", "y", y, x.shape());
  const int64_t n = x.dim(0) * rows_per_sample_;
  Tensor mean = mean_.slice(0, n), rstd = rstd_.slice(0, n);
  const Tensor xr = Tensor::borrow_const(x.data(), Shape{n, features_});
  Tensor yr = y.reshape(Shape{n, features_});
  pass.backend.layer_norm_forward(xr, gamma_.value, beta_.value, eps_, mean, rstd, yr);
}

void LayerNorm::backward(Pass& pass, const Tensor& x, const Tensor& /*y*/, const Tensor& dy,
                         Tensor* dx) {
  check_batched("layer_norm.backward", "x", x, sample_, max_batch_);
  check_shape("layer_norm.backward", "dy", dy, x.shape());
  if (dx != nullptr) check_shape("layer_norm.backward", "dx", *dx, x.shape());
  const int64_t n = x.dim(0) * rows_per_sample_;
  const Tensor mean = mean_.slice(0, n), rstd = rstd_.slice(0, n);
  const Tensor xr = Tensor::borrow_const(x.data(), Shape{n, features_});
  const Tensor dyr = Tensor::borrow_const(dy.data(), Shape{n, features_});
  Tensor dxr = dx ? dx->reshape(Shape{n, features_}) : Tensor();
  pass.backend.layer_norm_backward(xr, gamma_.value, mean, rstd, dyr, dx ? &dxr : nullptr,
                                   gamma_.grad, beta_.grad);
}

}  // namespace tuner::training
