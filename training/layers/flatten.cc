#include "training/layers/flatten.h"

namespace tuner::training {

void Flatten::setup(const Shape& sample_in, int64_t max_batch, Backend& /*backend*/) {
  sample_ = sample_in;
  max_batch_ = max_batch;
}

void Flatten::forward(Pass& pass, const Tensor& x, Tensor& y) {
  check_batched("flatten.forward", "x", x, sample_, max_batch_);
  check_shape("flatten.forward", "y", y, Shape{x.dim(0), sample_.numel()});
  pass.backend.copy(x, y);  // same elements, same order
}

void Flatten::backward(Pass& pass, const Tensor& x, const Tensor& /*y*/, const Tensor& dy,
                       Tensor* dx) {
  if (dx == nullptr) return;
  check_batched("flatten.backward", "x", x, sample_, max_batch_);
  check_shape("flatten.backward", "dy", dy, Shape{x.dim(0), sample_.numel()});
  check_shape("flatten.backward", "dx", *dx, x.shape());
  pass.backend.copy(dy, *dx);
}

}  // namespace tuner::training
