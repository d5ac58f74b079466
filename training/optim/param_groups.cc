#include "training/optim/param_groups.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace tuner::training {

ParamGroupOptimizer::ParamGroupOptimizer(Backend& backend, int64_t size,
                                         std::vector<ParamGroup> groups)
    : backend_(backend), size_(size) {
  if (size < 0) throw std::invalid_argument("param groups: size must be >= 0");
  std::sort(groups.begin(), groups.end(),
            [](const ParamGroup& a, const ParamGroup& b) { return a.begin < b.begin; });
  int64_t at = 0;
  for (const ParamGroup& g : groups) {
    if (g.begin < at || g.size < 0 || g.begin + g.size > size || !(g.lr_factor >= 0.0f)) {
      throw std::invalid_argument("param groups: group [" + std::to_string(g.begin) + ", " +
                                  std::to_string(g.begin + g.size) + ") with lr factor " +
                                  std::to_string(g.lr_factor) + " overlaps another, leaves [0, " +
                                  std::to_string(size) + ") or has a factor < 0");
    }
    if (g.begin > at) segments_.push_back({at, g.begin - at, 1.0f});
    if (g.size > 0) segments_.push_back(g);
    at = g.begin + g.size;
  }
  if (at < size) segments_.push_back({at, size - at, 1.0f});
}

ParamGroupOptimizer::ParamGroupOptimizer(Backend& backend, int64_t size, AdamOptions options,
                                         std::vector<ParamGroup> groups)
    : ParamGroupOptimizer(backend, size, std::move(groups)) {
  Adam check(backend, 0, options);  // validates the options as Adam does
  adam_ = true;
  adam_options_ = options;
  state_ = backend.allocate(Shape{2 * size});
}

ParamGroupOptimizer::ParamGroupOptimizer(Backend& backend, int64_t size, SgdOptions options,
                                         std::vector<ParamGroup> groups)
    : ParamGroupOptimizer(backend, size, std::move(groups)) {
  Sgd check(backend, 0, options);  // validates the options as Sgd does
  adam_ = false;
  sgd_options_ = options;
  if (options.momentum > 0.0f) state_ = backend.allocate(Shape{size});
}

std::string ParamGroupOptimizer::describe() const {
  std::string text = adam_ ? Adam(backend_, 0, adam_options_).describe()
                           : Sgd(backend_, 0, sgd_options_).describe();
  text += " with lr factors";
  for (const ParamGroup& g : segments_) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " [%lld, %lld) x%g", static_cast<long long>(g.begin),
                  static_cast<long long>(g.begin + g.size), static_cast<double>(g.lr_factor));
    text += buf;
  }
  return text;
}

void ParamGroupOptimizer::step(std::span<float> params, std::span<const float> grads, float lr) {
  if (static_cast<int64_t>(params.size()) != size_ || grads.size() != params.size()) {
    throw std::invalid_argument("param groups.step: " + std::to_string(params.size()) +
                                " parameters and " + std::to_string(grads.size()) +
                                " gradients, expected " + std::to_string(size_));
  }
  const bool first = steps_ == 0;
  ++steps_;
  std::span<float> state = this->state();
  for (const ParamGroup& g : segments_) {
    if (g.lr_factor == 0.0f || g.size == 0) continue;
    const auto b = static_cast<size_t>(g.begin), n = static_cast<size_t>(g.size);
    const float group_lr = lr * g.lr_factor;
    if (adam_) {
      const AdamOptions& o = adam_options_;
      AdamStepArgs args{group_lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.decoupled, steps_};
      backend_.adam_step(args, params.subspan(b, n), grads.subspan(b, n), state.subspan(b, n),
                         state.subspan(static_cast<size_t>(size_) + b, n));
    } else {
      const SgdOptions& o = sgd_options_;
      SgdStepArgs args{group_lr, o.momentum, o.dampening, o.weight_decay, o.nesterov, first};
      backend_.sgd_step(args, params.subspan(b, n), grads.subspan(b, n),
                        state.empty() ? std::span<float>() : state.subspan(b, n));
    }
  }
}

}  // namespace tuner::training
