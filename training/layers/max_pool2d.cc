#include "training/layers/max_pool2d.h"

#include <stdexcept>

#include "training/shape_error.h"

namespace tuner::training {

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride, int64_t padding)
    : window_{kernel, kernel, stride, padding} {
  if (kernel < 1 || stride < 1 || padding < 0 || padding > kernel / 2) {
    throw std::invalid_argument(
        "max_pool2d: kernel and stride must be >= 1, 0 <= padding <= kernel/2");
  }
}

std::string MaxPool2d::describe() const {
  return "max_pool2d(kernel " + std::to_string(window_.kernel_h) + ", stride " +
         std::to_string(window_.stride) + ", padding " + std::to_string(window_.padding) + ")";
}

Shape MaxPool2d::output_shape(const Shape& sample_in) const {
  if (sample_in.rank() != 3) {
    throw_shape_error("max_pool2d",
                      "input sample shape " + sample_in.to_string() + ", expected [C, H, W]");
  }
  const int64_t oh = window_.out_h(sample_in[1]), ow = window_.out_w(sample_in[2]);
  if (oh < 1 || ow < 1) {
    throw_shape_error("max_pool2d", "kernel " + std::to_string(window_.kernel_h) +
                                        " does not fit input " + sample_in.to_string());
  }
  return Shape{sample_in[0], oh, ow};
}

void MaxPool2d::setup(const Shape& sample_in, int64_t max_batch, Backend& backend) {
  sample_out_ = output_shape(sample_in);
  sample_in_ = sample_in;
  max_batch_ = max_batch;
  argmax_ = backend.allocate(Shape{sample_out_.numel() * max_batch});
}

// The argmax indices are int32 stored in float-sized slots of backend memory (backend.h).
std::span<int32_t> MaxPool2d::argmax(int64_t n) {
  return {reinterpret_cast<int32_t*>(argmax_.data()), static_cast<size_t>(n)};
}

void MaxPool2d::forward(Pass& pass, const Tensor& x, Tensor& y) {
  check_batched("max_pool2d.forward", "x", x, sample_in_, max_batch_);
  check_shape("max_pool2d.forward", "y", y, sample_out_.with_batch(x.dim(0)));
  const int64_t n = y.numel();
  pass.backend.max_pool2d_forward(window_, x, y, argmax(n));
}

void MaxPool2d::backward(Pass& pass, const Tensor& x, const Tensor& /*y*/, const Tensor& dy,
                         Tensor* dx) {
  if (dx == nullptr) return;
  check_batched("max_pool2d.backward", "x", x, sample_in_, max_batch_);
  check_shape("max_pool2d.backward", "dy", dy, sample_out_.with_batch(x.dim(0)));
  check_shape("max_pool2d.backward", "dx", *dx, x.shape());
  pass.backend.max_pool2d_backward(window_, argmax(dy.numel()), dy, *dx);
}

}  // namespace tuner::training
