#include "training/layers/batch_norm.h"

#include <cstdio>
#include <stdexcept>

#include "training/shape_error.h"

namespace tuner::training {

BatchNorm::BatchNorm(int64_t channels, float eps, float momentum)
    : channels_(channels), eps_(eps), momentum_(momentum) {
  if (channels < 1 || !(eps > 0.0f) || !(momentum >= 0.0f && momentum <= 1.0f)) {
    throw std::invalid_argument("batch_norm: channels >= 1, eps > 0, momentum in [0, 1]");
  }
}

std::string BatchNorm::describe() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "batch_norm(%lld, eps=%g, momentum=%g%s%s)",
                static_cast<long long>(channels_), static_cast<double>(eps_),
                static_cast<double>(momentum_), relu_fused_ ? ", relu fused" : "",
                max_pool_fused_ ? ", max pool fused" : "");
  return buf;
}

Shape BatchNorm::output_shape(const Shape& sample_in) const {
  if ((sample_in.rank() != 1 && sample_in.rank() != 3) || sample_in[0] != channels_) {
    throw_shape_error("batch_norm", "input sample shape " + sample_in.to_string() + ", expected [" +
                                        std::to_string(channels_) + "] or [" +
                                        std::to_string(channels_) + ", H, W]");
  }
  return sample_in;
}

std::vector<ParamSpec> BatchNorm::parameter_specs() const {
  return {{"gamma", Shape{channels_}, Init::kOnes, channels_, channels_},
          {"beta", Shape{channels_}, Init::kZeros, channels_, channels_}};
}

std::vector<BufferSpec> BatchNorm::buffer_specs() const {
  return {{"running_mean", Shape{channels_}, 0.0f}, {"running_var", Shape{channels_}, 1.0f}};
}

void BatchNorm::bind(std::span<ParamView> params, std::span<Tensor> buffers) {
  check_bind("batch_norm.bind", params.size(), 2, buffers.size(), 2);
  gamma_ = {params[0].value.view(), params[0].grad.view()};
  beta_ = {params[1].value.view(), params[1].grad.view()};
  running_mean_ = buffers[0].view();
  running_var_ = buffers[1].view();
}

bool BatchNorm::can_fuse(const MaxPool2d& pool, const Shape& sample_in) {
  const Window2d& w = pool.window();
  return w.kernel_h == 2 && w.kernel_w == 2 && w.stride == 2 && w.padding == 0 &&
         sample_in.rank() == 3 && sample_in[1] >= 2 && sample_in[2] >= 2;
}

void BatchNorm::setup(const Shape& sample_in, int64_t max_batch, Backend& backend) {
  sample_ = output_shape(sample_in);
  max_batch_ = max_batch;
  mean_ = backend.allocate(Shape{channels_});
  rstd_ = backend.allocate(Shape{channels_});
  const Shape batch_in = sample_.with_batch(max_batch);
  if (max_pool_fused_) {
    if (!relu_fused_ || sample_.rank() != 3 || sample_[1] < 2 || sample_[2] < 2) {
      throw std::logic_error(
          "batch_norm.setup: a fused max pooling needs the fused ReLU and "
          "input [C, H, W] with H, W >= 2");
    }
    pooled_ = Shape{channels_, sample_[1] / 2, sample_[2] / 2};
    argmax_ = backend.allocate(pooled_.with_batch(max_batch));
    eval_out_ = backend.allocate(batch_in);
  } else {
    argmax_ = Tensor();
    eval_out_ = Tensor();
  }
  const int64_t work = max_pool_fused_ ? backend.batch_norm_relu_pool_workspace(batch_in)
                       : relu_fused_   ? backend.batch_norm_relu_workspace(batch_in)
                                       : 0;
  work_ = work > 0 ? backend.allocate(Shape{work}) : Tensor();
}

void BatchNorm::forward(Pass& pass, const Tensor& x, Tensor& y) {
  if (max_pool_fused_)
    throw std::logic_error("batch_norm.forward: max pooling is fused; use forward_pooled");
  check_batched("batch_norm.forward", "x", x, sample_, max_batch_);
  check_shape("batch_norm.forward", "y", y, x.shape());
  last_mode_ = pass.mode;
  if (relu_fused_ && pass.mode == Mode::kTrain) {
    pass.backend.batch_norm_relu_forward_train(x, gamma_.value, beta_.value, eps_, momentum_,
                                               running_mean_, running_var_, mean_, rstd_, y);
  } else if (relu_fused_) {
    pass.backend.batch_norm_relu_forward_eval(x, gamma_.value, beta_.value, eps_, running_mean_,
                                              running_var_, y);
  } else if (pass.mode == Mode::kTrain) {
    pass.backend.batch_norm_forward_train(x, gamma_.value, beta_.value, eps_, momentum_,
                                          running_mean_, running_var_, mean_, rstd_, y);
  } else {
    pass.backend.batch_norm_forward_eval(x, gamma_.value, beta_.value, eps_, running_mean_,
                                         running_var_, y);
  }
}

void BatchNorm::backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                         Tensor* dx) {
  if (max_pool_fused_)
    throw std::logic_error("batch_norm.backward: max pooling is fused; use backward_pooled");
  if (last_mode_ != Mode::kTrain) {
    throw std::logic_error("batch_norm.backward: the latest forward ran in eval mode");
  }
  check_batched("batch_norm.backward", "x", x, sample_, max_batch_);
  check_shape("batch_norm.backward", "dy", dy, x.shape());
  if (dx != nullptr) check_shape("batch_norm.backward", "dx", *dx, x.shape());
  if (relu_fused_) {
    check_shape("batch_norm.backward", "y", y, x.shape());
    const int64_t need = pass.backend.batch_norm_relu_workspace(x.shape());
    pass.backend.batch_norm_relu_backward(x, y, gamma_.value, mean_, rstd_, dy, dx, gamma_.grad,
                                          beta_.grad,
                                          work_.span().first(static_cast<size_t>(need)));
  } else {
    pass.backend.batch_norm_backward(x, gamma_.value, mean_, rstd_, dy, dx, gamma_.grad,
                                     beta_.grad);
  }
}

namespace {

// The argmax indices are int32 stored in float-sized slots of backend memory (backend.h).
std::span<int32_t> as_indices(Tensor& t, int64_t n) {
  return {reinterpret_cast<int32_t*>(t.data()), static_cast<size_t>(n)};
}

constexpr Window2d kPool2x2{2, 2, 2, 0};

}  // namespace

void BatchNorm::forward_pooled(Pass& pass, const Tensor& x, Tensor& y) {
  if (!max_pool_fused_) throw std::logic_error("batch_norm.forward_pooled: no max pooling fused");
  check_batched("batch_norm.forward_pooled", "x", x, sample_, max_batch_);
  check_shape("batch_norm.forward_pooled", "y", y, pooled_.with_batch(x.dim(0)));
  last_mode_ = pass.mode;
  const std::span<int32_t> argmax = as_indices(argmax_, y.numel());
  if (pass.mode == Mode::kTrain) {
    const int64_t need = pass.backend.batch_norm_relu_pool_workspace(x.shape());
    if (need > work_.numel()) {
      throw_shape_error("batch_norm.forward_pooled",
                        "backend needs a larger workspace than setup() sized; "
                        "use the backend given to setup()");
    }
    pass.backend.batch_norm_relu_pool_forward_train(
        x, gamma_.value, beta_.value, eps_, momentum_, running_mean_, running_var_, mean_, rstd_, y,
        argmax, work_.span().first(static_cast<size_t>(need)));
  } else {
    Tensor z = eval_out_.slice(0, x.dim(0));
    pass.backend.batch_norm_relu_forward_eval(x, gamma_.value, beta_.value, eps_, running_mean_,
                                              running_var_, z);
    pass.backend.max_pool2d_forward(kPool2x2, z, y, argmax);
  }
}

void BatchNorm::backward_pooled(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                                Tensor* dx) {
  if (!max_pool_fused_) throw std::logic_error("batch_norm.backward_pooled: no max pooling fused");
  if (last_mode_ != Mode::kTrain) {
    throw std::logic_error("batch_norm.backward_pooled: the latest forward ran in eval mode");
  }
  check_batched("batch_norm.backward_pooled", "x", x, sample_, max_batch_);
  const int64_t batch = x.dim(0);
  check_shape("batch_norm.backward_pooled", "y", y, pooled_.with_batch(batch));
  check_shape("batch_norm.backward_pooled", "dy", dy, pooled_.with_batch(batch));
  if (dx != nullptr) check_shape("batch_norm.backward_pooled", "dx", *dx, x.shape());
  const int64_t need = pass.backend.batch_norm_relu_pool_workspace(x.shape());
  const std::span<const int32_t> argmax = as_indices(argmax_, y.numel());
  pass.backend.batch_norm_relu_pool_backward(x, y, argmax, gamma_.value, mean_, rstd_, dy, dx,
                                             gamma_.grad, beta_.grad,
                                             work_.span().first(static_cast<size_t>(need)));
}

}  // namespace tuner::training
