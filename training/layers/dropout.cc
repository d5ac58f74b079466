#include "training/layers/dropout.h"

#include <cstdio>
#include <stdexcept>

#include "training/rng.h"

namespace tuner::training {

Dropout::Dropout(float p, uint64_t seed) : p_(p), seed_(seed) {
  if (!(p >= 0.0f && p < 1.0f)) {
    throw std::invalid_argument("dropout: p must be in [0, 1), got " + std::to_string(p));
  }
}

std::string Dropout::describe() const {
  char buf[48];
  std::snprintf(buf, sizeof buf, "dropout(p=%g)", static_cast<double>(p_));
  return buf;
}

void Dropout::setup(const Shape& sample_in, int64_t max_batch, Backend& backend) {
  sample_ = sample_in;
  max_batch_ = max_batch;
  mask_ = backend.allocate(sample_in.with_batch(max_batch));
}

void Dropout::forward(Pass& pass, const Tensor& x, Tensor& y) {
  check_batched("dropout.forward", "x", x, sample_, max_batch_);
  check_shape("dropout.forward", "y", y, x.shape());
  last_mode_ = pass.mode;
  if (pass.mode == Mode::kEval || p_ == 0.0f) {
    pass.backend.copy(x, y);
    return;
  }
  Tensor mask = mask_.slice(0, x.dim(0));
  uint64_t state = seed_ + calls_++;
  pass.backend.dropout_forward(p_, splitmix64(state), x, mask, y);
}

void Dropout::backward(Pass& pass, const Tensor& x, const Tensor& /*y*/, const Tensor& dy,
                       Tensor* dx) {
  if (dx == nullptr) return;
  check_batched("dropout.backward", "x", x, sample_, max_batch_);
  check_shape("dropout.backward", "dy", dy, x.shape());
  check_shape("dropout.backward", "dx", *dx, x.shape());
  if (last_mode_ == Mode::kEval || p_ == 0.0f) {
    pass.backend.copy(dy, *dx);
    return;
  }
  Tensor mask = mask_.slice(0, x.dim(0));
  pass.backend.mul(dy, mask, *dx);
}

}  // namespace tuner::training
