#include "training/layers/global_avg_pool.h"

#include "training/shape_error.h"

namespace tuner::training {

Shape GlobalAvgPool::output_shape(const Shape& sample_in) const {
  if (sample_in.rank() != 3) {
    throw_shape_error("global_avg_pool",
                      "input sample shape " + sample_in.to_string() + ", expected [C, H, W]");
  }
  return Shape{sample_in[0]};
}

void GlobalAvgPool::setup(const Shape& sample_in, int64_t max_batch, Backend& /*backend*/) {
  output_shape(sample_in);
  sample_in_ = sample_in;
  max_batch_ = max_batch;
}

void GlobalAvgPool::forward(Pass& pass, const Tensor& x, Tensor& y) {
  check_batched("global_avg_pool.forward", "x", x, sample_in_, max_batch_);
  check_shape("global_avg_pool.forward", "y", y, Shape{x.dim(0), sample_in_[0]});
  pass.backend.global_avg_pool_forward(x, y);
}

void GlobalAvgPool::backward(Pass& pass, const Tensor& x, const Tensor& /*y*/, const Tensor& dy,
                             Tensor* dx) {
  if (dx == nullptr) return;
  check_batched("global_avg_pool.backward", "x", x, sample_in_, max_batch_);
  check_shape("global_avg_pool.backward", "dy", dy, Shape{x.dim(0), sample_in_[0]});
  check_shape("global_avg_pool.backward", "dx", *dx, x.shape());
  pass.backend.global_avg_pool_backward(dy, *dx);
}

}  // namespace tuner::training
