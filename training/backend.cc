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

}  // namespace tuner::training
