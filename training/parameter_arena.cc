#include "training/parameter_arena.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tuner::training {

ParameterArena::ParameterArena(std::vector<ParamSpec> params, std::vector<BufferSpec> buffers,
                               Backend& backend)
    : backend_(backend), param_specs_(std::move(params)), buffer_specs_(std::move(buffers)) {
  int64_t total = 0;
  for (const ParamSpec& p : param_specs_) {
    offsets_.push_back(total);
    total += (p.shape.numel() + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  }
  int64_t buffer_total = 0;
  for (const BufferSpec& b : buffer_specs_) buffer_total += b.shape.numel();
  values_ = backend.allocate(Shape{total});
  grads_ = backend.allocate(Shape{total});
  buffer_values_ = backend.allocate(Shape{buffer_total});
  for (size_t i = 0; i < param_specs_.size(); ++i) {
    views_.push_back({Tensor::borrow(values_.data() + offsets_[i], param_specs_[i].shape),
                      Tensor::borrow(grads_.data() + offsets_[i], param_specs_[i].shape)});
  }
  int64_t at = 0;
  for (const BufferSpec& b : buffer_specs_) {
    buffer_views_.push_back(Tensor::borrow(buffer_values_.data() + at, b.shape));
    at += b.shape.numel();
  }
  reset_buffers();
}

int64_t ParameterArena::num_parameters() const {
  int64_t n = 0;
  for (const ParamSpec& p : param_specs_) n += p.shape.numel();
  return n;
}

void ParameterArena::initialize(uint64_t seed) {
  // Drawn on the host, in spec order, so every backend starts from the same values.
  std::vector<float> host(values_.span().size(), 0.0f);
  Rng rng(seed);
  for (size_t i = 0; i < param_specs_.size(); ++i) {
    const ParamSpec& p = param_specs_[i];
    std::span<float> param(host.data() + offsets_[i], static_cast<size_t>(p.shape.numel()));
    training::initialize(p.init, p.fan_in, p.fan_out, rng, param);
  }
  set_values(host);
  reset_buffers();
}

void ParameterArena::reset_buffers() {
  std::vector<float> host;
  host.reserve(buffer_values_.span().size());
  for (const BufferSpec& b : buffer_specs_) host.insert(host.end(), b.shape.numel(), b.initial);
  set_buffer_values(host);
}

void ParameterArena::zero_grads() {
  backend_.upload(std::vector<float>(grads_.span().size(), 0.0f), grads_.span());
}

namespace {

std::vector<float> to_host(Backend& backend, std::span<const float> src) {
  std::vector<float> host(src.size());
  backend.download(src, host);
  return host;
}

void from_host(Backend& backend, const char* what, std::span<const float> host,
               std::span<float> dst) {
  if (host.size() != dst.size()) {
    throw std::invalid_argument(std::string("parameter arena: ") + std::to_string(host.size()) +
                                " " + what + " given for " + std::to_string(dst.size()));
  }
  backend.upload(host, dst);
}

}  // namespace

std::vector<float> ParameterArena::values_to_host() const {
  return to_host(backend_, values_.span());
}

std::vector<float> ParameterArena::buffer_values_to_host() const {
  return to_host(backend_, buffer_values_.span());
}

void ParameterArena::set_values(std::span<const float> host) {
  from_host(backend_, "values", host, values_.span());
}

void ParameterArena::set_buffer_values(std::span<const float> host) {
  from_host(backend_, "buffer values", host, buffer_values_.span());
}

}  // namespace tuner::training
