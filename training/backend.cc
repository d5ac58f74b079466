#include "training/backend.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tuner::training {

std::string_view activation_name(Activation act) {
  switch (act) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kGelu:
      return "gelu";
    case Activation::kTanh:
      return "tanh";
    case Activation::kSigmoid:
      return "sigmoid";
  }
  return "?";
}

bool activation_fusable(Activation act) { return act != Activation::kGelu; }

namespace {
void check_sizes(const char* op, size_t from, size_t to) {
  if (from != to) {
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(from) + " values into " +
                                std::to_string(to));
  }
}
}  // namespace

void Backend::upload(std::span<const float> host, std::span<float> dst) {
  check_sizes("backend.upload", host.size(), dst.size());
  std::copy(host.begin(), host.end(), dst.begin());
}

void Backend::download(std::span<const float> src, std::span<float> host) {
  check_sizes("backend.download", src.size(), host.size());
  std::copy(src.begin(), src.end(), host.begin());
}

namespace {
// The max pooling that conv2d_pool_* fuse.
constexpr Window2d kPool2x2{2, 2, 2, 0};

// The unfolded input [B, C*KH*KW, OH*OW] of x[B,C,H,W].
Shape unfolded(const Window2d& win, const Shape& x) {
  return Shape{x[0], x[1] * win.kernel_h * win.kernel_w, win.out_h(x[2]) * win.out_w(x[3])};
}

// The convolution's output [B,O,OH,OW] for input x[B,C,H,W].
Shape conv_output(const Window2d& win, const Shape& x, int64_t out_channels) {
  return Shape{x[0], out_channels, win.out_h(x[2]), win.out_w(x[3])};
}
}  // namespace

// The pair's workspace: the unfolded input [B, C*KH*KW, OH*OW], the convolution's output, the
// gradient the pooling passes back to it and the dz of its activation (each [B,O,OH,OW]), then
// conv2d_backward's own workspace.
int64_t Backend::conv2d_pool_workspace(const Window2d& win, const Shape& x,
                                       int64_t out_channels) const {
  return unfolded(win, x).numel() + 3 * conv_output(win, x, out_channels).numel() +
         conv2d_backward_workspace(win, x, out_channels);
}

void Backend::conv2d_pool_forward(const Window2d& win, const Tensor& x, const Tensor& w,
                                  const Tensor* bias, Activation act, Tensor& y,
                                  std::span<int32_t> argmax, std::span<float> work) {
  const Shape col_shape = unfolded(win, x.shape());
  Tensor col = Tensor::borrow(work.data(), col_shape);
  Tensor conv_y =
      Tensor::borrow(work.data() + col_shape.numel(), conv_output(win, x.shape(), w.dim(0)));
  conv2d_forward(win, x, w, bias, act, col, conv_y);
  max_pool2d_forward(kPool2x2, conv_y, y, argmax);
}

void Backend::conv2d_pool_backward(const Window2d& win, const Tensor& x, const Tensor& w,
                                   const Tensor& /*y*/, std::span<const int32_t> argmax,
                                   Activation act, const Tensor& dy, Tensor* dx, Tensor& dw,
                                   Tensor* db, std::span<float> work) {
  const Shape col_shape = unfolded(win, x.shape());
  const Shape conv_shape = conv_output(win, x.shape(), w.dim(0));
  const int64_t n = conv_shape.numel();
  float* p = work.data();
  const Tensor col = Tensor::borrow(p, col_shape);
  p += col_shape.numel();
  const Tensor conv_y = Tensor::borrow(p, conv_shape);
  Tensor conv_dy = Tensor::borrow(p + n, conv_shape);
  Tensor conv_dz = Tensor::borrow(p + 2 * n, conv_shape);
  max_pool2d_backward(kPool2x2, argmax, dy, conv_dy);
  conv2d_backward(win, x, w, col, conv_y, act, conv_dy, conv_dz, dx, dw, db,
                  work.subspan(static_cast<size_t>(col_shape.numel() + 3 * n)));
}

void Backend::batch_norm_relu_forward_train(const Tensor& x, const Tensor& gamma,
                                            const Tensor& beta, float eps, float momentum,
                                            Tensor& running_mean, Tensor& running_var, Tensor& mean,
                                            Tensor& rstd, Tensor& y) {
  batch_norm_forward_train(x, gamma, beta, eps, momentum, running_mean, running_var, mean, rstd, y);
  activation_forward(Activation::kRelu, y, y);
}

void Backend::batch_norm_relu_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                           float eps, const Tensor& running_mean,
                                           const Tensor& running_var, Tensor& y) {
  batch_norm_forward_eval(x, gamma, beta, eps, running_mean, running_var, y);
  activation_forward(Activation::kRelu, y, y);
}

int64_t Backend::batch_norm_relu_workspace(const Shape& x) const { return x.numel(); }

void Backend::batch_norm_relu_backward(const Tensor& x, const Tensor& y, const Tensor& gamma,
                                       const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                                       Tensor* dx, Tensor& dgamma, Tensor& dbeta,
                                       std::span<float> work) {
  Tensor dz = Tensor::borrow(work.data(), x.shape());
  // y > 0 exactly where the ReLU's input was: y stands in for that input.
  activation_backward(Activation::kRelu, y, y, dy, dz);
  batch_norm_backward(x, gamma, mean, rstd, dz, dx, dgamma, dbeta);
}

// The triple's workspace: the pair's output [B,C,H,W], the pooling's gradient to it, then
// batch_norm_relu_backward's own workspace.
int64_t Backend::batch_norm_relu_pool_workspace(const Shape& x) const {
  return 2 * x.numel() + batch_norm_relu_workspace(x);
}

void Backend::batch_norm_relu_pool_forward_train(const Tensor& x, const Tensor& gamma,
                                                 const Tensor& beta, float eps, float momentum,
                                                 Tensor& running_mean, Tensor& running_var,
                                                 Tensor& mean, Tensor& rstd, Tensor& y,
                                                 std::span<int32_t> argmax, std::span<float> work) {
  Tensor z = Tensor::borrow(work.data(), x.shape());
  batch_norm_relu_forward_train(x, gamma, beta, eps, momentum, running_mean, running_var, mean,
                                rstd, z);
  max_pool2d_forward(kPool2x2, z, y, argmax);
}

void Backend::batch_norm_relu_pool_backward(const Tensor& x, const Tensor& /*y*/,
                                            std::span<const int32_t> argmax, const Tensor& gamma,
                                            const Tensor& mean, const Tensor& rstd,
                                            const Tensor& dy, Tensor* dx, Tensor& dgamma,
                                            Tensor& dbeta, std::span<float> work) {
  const int64_t n = x.numel();
  const Tensor z = Tensor::borrow(work.data(), x.shape());
  Tensor dz = Tensor::borrow(work.data() + n, x.shape());
  max_pool2d_backward(kPool2x2, argmax, dy, dz);
  batch_norm_relu_backward(x, z, gamma, mean, rstd, dz, dx, dgamma, dbeta,
                           work.subspan(static_cast<size_t>(2 * n)));
}

}  // namespace tuner::training
