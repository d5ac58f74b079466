#include "training/layers/conv2d.h"

#include <stdexcept>

#include "training/shape_error.h"

namespace tuner::training {
namespace {

// The argmax indices are int32 stored in float-sized slots of backend memory (backend.h).
std::span<int32_t> as_indices(Tensor& t, int64_t n) {
  return {reinterpret_cast<int32_t*>(t.data()), static_cast<size_t>(n)};
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Options options)
    : in_(in_channels),
      out_(out_channels),
      kernel_(kernel),
      options_(options),
      window_{kernel, kernel, options.stride, options.padding} {
  if (in_ < 1 || out_ < 1 || kernel_ < 1 || options_.stride < 1 || options_.padding < 0) {
    throw std::invalid_argument("conv2d: channels, kernel and stride must be >= 1, padding >= 0");
  }
  if (!activation_fusable(options_.activation)) {
    throw std::invalid_argument("conv2d: activation " +
                                std::string(activation_name(options_.activation)) +
                                " cannot be fused; use a separate activation layer");
  }
}

std::string Conv2d::describe() const {
  std::string s = "conv2d(" + std::to_string(in_) + " -> " + std::to_string(out_) + ", kernel " +
                  std::to_string(kernel_) + ", stride " + std::to_string(options_.stride) +
                  ", padding " + std::to_string(options_.padding);
  if (!options_.bias) s += ", no bias";
  if (options_.activation != Activation::kNone) {
    s += ", " + std::string(activation_name(options_.activation));
  }
  return s + ")";
}

Shape Conv2d::output_shape(const Shape& sample_in) const {
  if (sample_in.rank() != 3 || sample_in[0] != in_) {
    throw_shape_error("conv2d", "input sample shape " + sample_in.to_string() + ", expected [" +
                                    std::to_string(in_) + ", H, W]");
  }
  const int64_t oh = window_.out_h(sample_in[1]), ow = window_.out_w(sample_in[2]);
  if (oh < 1 || ow < 1) {
    throw_shape_error("conv2d", "kernel " + std::to_string(kernel_) + " with padding " +
                                    std::to_string(options_.padding) + " does not fit input " +
                                    sample_in.to_string());
  }
  return Shape{out_, oh, ow};
}

int64_t Conv2d::forward_flops(const Shape& sample_in) const {
  const int64_t outputs = output_shape(sample_in).numel();
  // The products, the bias and a fused activation (as its own layer would count it).
  return outputs * (2 * in_ * kernel_ * kernel_ + (options_.bias ? 1 : 0) +
                    (options_.activation != Activation::kNone ? 1 : 0));
}

std::vector<ParamSpec> Conv2d::parameter_specs() const {
  const int64_t fan_in = in_ * kernel_ * kernel_, fan_out = out_ * kernel_ * kernel_;
  std::vector<ParamSpec> specs{
      {"weight", Shape{out_, in_, kernel_, kernel_}, Init::kHeUniform, fan_in, fan_out}};
  if (options_.bias) specs.push_back({"bias", Shape{out_}, Init::kZeros, fan_in, fan_out});
  return specs;
}

void Conv2d::bind(std::span<ParamView> params, std::span<Tensor> buffers) {
  check_bind("conv2d.bind", params.size(), options_.bias ? 2 : 1, buffers.size(), 0);
  weight_ = {params[0].value.view(), params[0].grad.view()};
  if (options_.bias) bias_ = {params[1].value.view(), params[1].grad.view()};
}

bool Conv2d::can_fuse(const MaxPool2d& pool) {
  const Window2d& w = pool.window();
  return w.kernel_h == 2 && w.kernel_w == 2 && w.stride == 2 && w.padding == 0;
}

void Conv2d::setup(const Shape& sample_in, int64_t max_batch, Backend& backend) {
  sample_out_ = output_shape(sample_in);
  sample_in_ = sample_in;
  max_batch_ = max_batch;
  const Shape batch_in = sample_in.with_batch(max_batch);
  if (max_pool_fused_) {
    pooled_out_ = Shape{out_, sample_out_[1] / 2, sample_out_[2] / 2};
    if (pooled_out_[1] < 1 || pooled_out_[2] < 1) {
      throw_shape_error("conv2d.setup", "output " + sample_out_.to_string() +
                                            " is too small for a fused 2x2 max pooling");
    }
    col_ = Tensor();
    dz_ = Tensor();
    argmax_ = backend.allocate(Shape{pooled_out_.numel() * max_batch});
    work_ = backend.allocate(Shape{backend.conv2d_pool_workspace(window_, batch_in, out_)});
    return;
  }
  col_ =
      backend.allocate(Shape{max_batch, in_ * kernel_ * kernel_, sample_out_[1] * sample_out_[2]});
  dz_ = options_.activation != Activation::kNone
            ? backend.allocate(sample_out_.with_batch(max_batch))
            : Tensor();
  argmax_ = Tensor();
  work_ = backend.allocate(Shape{backend.conv2d_backward_workspace(window_, batch_in, out_)});
}

void Conv2d::check_workspace(const char* op, const Backend& backend) const {
  const Shape batch_in = sample_in_.with_batch(max_batch_);
  const int64_t need = max_pool_fused_ ? backend.conv2d_pool_workspace(window_, batch_in, out_)
                                       : backend.conv2d_backward_workspace(window_, batch_in, out_);
  if (need > work_.numel()) {
    throw_shape_error(op,
                      "backend needs a larger workspace than setup() sized; "
                      "use the backend given to setup()");
  }
}

void Conv2d::forward(Pass& pass, const Tensor& x, Tensor& y) {
  if (max_pool_fused_)
    throw std::logic_error("conv2d.forward: max pooling is fused; use forward_pooled");
  check_batched("conv2d.forward", "x", x, sample_in_, max_batch_);
  check_shape("conv2d.forward", "y", y, sample_out_.with_batch(x.dim(0)));
  Tensor col = col_.slice(0, x.dim(0));
  pass.backend.conv2d_forward(window_, x, weight_.value, options_.bias ? &bias_.value : nullptr,
                              options_.activation, col, y);
}

void Conv2d::backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) {
  if (max_pool_fused_)
    throw std::logic_error("conv2d.backward: max pooling is fused; use backward_pooled");
  check_batched("conv2d.backward", "x", x, sample_in_, max_batch_);
  const int64_t batch = x.dim(0);
  check_shape("conv2d.backward", "y", y, sample_out_.with_batch(batch));
  check_shape("conv2d.backward", "dy", dy, sample_out_.with_batch(batch));
  if (dx != nullptr) check_shape("conv2d.backward", "dx", *dx, x.shape());
  check_workspace("conv2d.backward", pass.backend);
  Tensor col = col_.slice(0, batch);
  Tensor dz = dz_.empty() ? Tensor() : dz_.slice(0, batch);
  pass.backend.conv2d_backward(window_, x, weight_.value, col, y, options_.activation, dy, dz, dx,
                               weight_.grad, options_.bias ? &bias_.grad : nullptr, work_.span());
}

void Conv2d::forward_pooled(Pass& pass, const Tensor& x, Tensor& y) {
  if (!max_pool_fused_) throw std::logic_error("conv2d.forward_pooled: no max pooling fused");
  check_batched("conv2d.forward_pooled", "x", x, sample_in_, max_batch_);
  check_shape("conv2d.forward_pooled", "y", y, pooled_out_.with_batch(x.dim(0)));
  check_workspace("conv2d.forward_pooled", pass.backend);
  pass.backend.conv2d_pool_forward(window_, x, weight_.value,
                                   options_.bias ? &bias_.value : nullptr, options_.activation, y,
                                   as_indices(argmax_, y.numel()), work_.span());
}

void Conv2d::backward_pooled(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                             Tensor* dx) {
  if (!max_pool_fused_) throw std::logic_error("conv2d.backward_pooled: no max pooling fused");
  check_batched("conv2d.backward_pooled", "x", x, sample_in_, max_batch_);
  const int64_t batch = x.dim(0);
  check_shape("conv2d.backward_pooled", "y", y, pooled_out_.with_batch(batch));
  check_shape("conv2d.backward_pooled", "dy", dy, pooled_out_.with_batch(batch));
  if (dx != nullptr) check_shape("conv2d.backward_pooled", "dx", *dx, x.shape());
  check_workspace("conv2d.backward_pooled", pass.backend);
  pass.backend.conv2d_pool_backward(window_, x, weight_.value, y, as_indices(argmax_, dy.numel()),
                                    options_.activation, dy, dx, weight_.grad,
                                    options_.bias ? &bias_.grad : nullptr, work_.span());
}

}  // namespace tuner::training
