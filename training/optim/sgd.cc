#include "training/optim/sgd.h"

#include <cstdio>
#include <stdexcept>

namespace tuner::training {

Sgd::Sgd(Backend& backend, int64_t size, SgdOptions options)
    : backend_(backend), size_(size), options_(options) {
  if (size < 0 || options.momentum < 0.0f || options.weight_decay < 0.0f ||
      options.dampening < 0.0f) {
    throw std::invalid_argument("sgd: size, momentum, dampening and weight_decay must be >= 0");
  }
  if (options.nesterov && (options.momentum <= 0.0f || options.dampening != 0.0f)) {
    throw std::invalid_argument("sgd: nesterov needs momentum > 0 and dampening 0");
  }
  if (options.momentum > 0.0f) velocity_ = backend.allocate(Shape{size});
}

std::string Sgd::describe() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "sgd(momentum=%g, dampening=%g, weight_decay=%g%s)",
                static_cast<double>(options_.momentum), static_cast<double>(options_.dampening),
                static_cast<double>(options_.weight_decay), options_.nesterov ? ", nesterov" : "");
  return buf;
}

void Sgd::step(std::span<float> params, std::span<const float> grads, float lr) {
  if (static_cast<int64_t>(params.size()) != size_ || grads.size() != params.size()) {
    throw std::invalid_argument("sgd.step: " + std::to_string(params.size()) + " parameters and " +
                                std::to_string(grads.size()) + " gradients, expected " +
                                std::to_string(size_));
  }
  SgdStepArgs args{
      lr,         options_.momentum, options_.dampening, options_.weight_decay, options_.nesterov,
      steps_ == 0};
  backend_.sgd_step(args, params, grads, state());
  ++steps_;
}

}  // namespace tuner::training
