#include "training/parameter_arena.h"

#include <algorithm>

namespace tuner::training {

ParameterArena::ParameterArena(std::vector<ParamSpec> params, std::vector<BufferSpec> buffers)
    : param_specs_(std::move(params)), buffer_specs_(std::move(buffers)) {
  int64_t total = 0;
  for (const ParamSpec& p : param_specs_) {
    offsets_.push_back(total);
    total += (p.shape.numel() + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  }
  int64_t buffer_total = 0;
  for (const BufferSpec& b : buffer_specs_) buffer_total += b.shape.numel();
  values_ = Tensor(Shape{total});
  grads_ = Tensor(Shape{total});
  buffer_values_ = Tensor(Shape{buffer_total});
  for (size_t i = 0; i < param_specs_.size(); ++i) {
    views_.push_back({Tensor::borrow(values_.data() + offsets_[i], param_specs_[i].shape),
                      Tensor::borrow(grads_.data() + offsets_[i], param_specs_[i].shape)});
  }
  int64_t at = 0;
  for (const BufferSpec& b : buffer_specs_) {
    buffer_views_.push_back(Tensor::borrow(buffer_values_.data() + at, b.shape));
    at += b.shape.numel();
  }
  for (size_t i = 0; i < buffer_specs_.size(); ++i) buffer_views_[i].fill(buffer_specs_[i].initial);
}

int64_t ParameterArena::num_parameters() const {
  int64_t n = 0;
  for (const ParamSpec& p : param_specs_) n += p.shape.numel();
  return n;
}

void ParameterArena::initialize(uint64_t seed) {
  Rng rng(seed);
  for (size_t i = 0; i < param_specs_.size(); ++i) {
    const ParamSpec& p = param_specs_[i];
    training::initialize(p.init, p.fan_in, p.fan_out, rng, views_[i].value.span());
  }
  for (size_t i = 0; i < buffer_specs_.size(); ++i) buffer_views_[i].fill(buffer_specs_[i].initial);
}

void ParameterArena::zero_grads() { grads_.fill(0.0f); }

}  // namespace tuner::training
