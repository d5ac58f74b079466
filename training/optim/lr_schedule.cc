#include "training/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <stdexcept>

namespace tuner::training {
namespace {

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

}  // namespace

ConstantLr::ConstantLr(double base_lr) : base_lr_(base_lr) {
  if (!(base_lr > 0.0)) throw std::invalid_argument("constant lr: base_lr must be > 0");
}
double ConstantLr::lr(int64_t /*step*/) const { return base_lr_; }
std::string ConstantLr::describe() const { return format("constant(lr=%g)", base_lr_); }

StepLr::StepLr(double base_lr, int64_t step_size, double gamma)
    : base_lr_(base_lr), step_size_(step_size), gamma_(gamma) {
  if (!(base_lr > 0.0) || step_size < 1 || !(gamma > 0.0)) {
    throw std::invalid_argument("step lr: base_lr > 0, step_size >= 1, gamma > 0");
  }
}
double StepLr::lr(int64_t step) const {
  return base_lr_ * std::pow(gamma_, static_cast<double>(std::max<int64_t>(step, 0) / step_size_));
}
std::string StepLr::describe() const {
  return format("step(lr=%g, step_size=%g, gamma=%g)", base_lr_, static_cast<double>(step_size_),
                gamma_);
}

CosineLr::CosineLr(double base_lr, int64_t warmup_steps, int64_t total_steps, double min_lr)
    : base_lr_(base_lr), warmup_steps_(warmup_steps), total_steps_(total_steps), min_lr_(min_lr) {
  if (!(base_lr > 0.0) || warmup_steps < 0 || warmup_steps >= total_steps ||
      !(min_lr >= 0.0 && min_lr <= base_lr)) {
    throw std::invalid_argument(
        "cosine lr: base_lr > 0, 0 <= warmup_steps < total_steps, 0 <= min_lr <= base_lr");
  }
}
double CosineLr::lr(int64_t step) const {
  if (step < warmup_steps_) {
    return base_lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_steps_);
  }
  const double progress = std::clamp(
      static_cast<double>(step - warmup_steps_) / static_cast<double>(total_steps_ - warmup_steps_),
      0.0, 1.0);
  return min_lr_ + (base_lr_ - min_lr_) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}
std::string CosineLr::describe() const {
  return format("cosine(lr=%g, warmup=%g, total=%g, min_lr=%g)", base_lr_,
                static_cast<double>(warmup_steps_), static_cast<double>(total_steps_), min_lr_);
}

double scale_lr_linear(double base_lr, int64_t base_batch, int64_t batch) {
  if (base_batch < 1 || batch < 1) throw std::invalid_argument("scale_lr_linear: batch >= 1");
  return base_lr * static_cast<double>(batch) / static_cast<double>(base_batch);
}

double scale_lr_sqrt(double base_lr, int64_t base_batch, int64_t batch) {
  if (base_batch < 1 || batch < 1) throw std::invalid_argument("scale_lr_sqrt: batch >= 1");
  return base_lr * std::sqrt(static_cast<double>(batch) / static_cast<double>(base_batch));
}

}  // namespace tuner::training
