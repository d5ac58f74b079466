#include "training/optim/adam.h"

#include <cstdio>
#include <stdexcept>

namespace tuner::training {

AdamOptions adamw_options(float weight_decay) {
  AdamOptions o;
  o.weight_decay = weight_decay;
  o.decoupled = true;
  return o;
}

Adam::Adam(Backend& backend, int64_t size, AdamOptions options)
    : backend_(backend), size_(size), options_(options) {
  if (size < 0 || !(options.beta1 >= 0.0f && options.beta1 < 1.0f) ||
      !(options.beta2 >= 0.0f && options.beta2 < 1.0f) || !(options.eps > 0.0f) ||
      options.weight_decay < 0.0f) {
    throw std::invalid_argument("adam: betas in [0, 1), eps > 0, weight_decay >= 0");
  }
  state_ = backend.allocate(Shape{2 * size});
}

std::string Adam::describe() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s(betas=(%g, %g), eps=%g, weight_decay=%g)",
                options_.decoupled ? "adamw" : "adam", static_cast<double>(options_.beta1),
                static_cast<double>(options_.beta2), static_cast<double>(options_.eps),
                static_cast<double>(options_.weight_decay));
  return buf;
}

void Adam::step(std::span<float> params, std::span<const float> grads, float lr) {
  if (static_cast<int64_t>(params.size()) != size_ || grads.size() != params.size()) {
    throw std::invalid_argument("adam.step: " + std::to_string(params.size()) + " parameters and " +
                                std::to_string(grads.size()) + " gradients, expected " +
                                std::to_string(size_));
  }
  ++steps_;
  AdamStepArgs args{lr,           options_.beta1,        options_.beta2,
                    options_.eps, options_.weight_decay, options_.decoupled,
                    steps_};
  std::span<float> all = state_.span();
  backend_.adam_step(args, params, grads, all.subspan(0, size_), all.subspan(size_, size_));
}

}  // namespace tuner::training
