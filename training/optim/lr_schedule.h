// Learning-rate schedules and the batch-size scaling rules.
#ifndef TUNER_TRAINING_OPTIM_LR_SCHEDULE_H_
#define TUNER_TRAINING_OPTIM_LR_SCHEDULE_H_

#include <cstdint>
#include <string>

namespace tuner::training {

// The learning rate as a function of the 0-based optimizer step. Immutable; thread-safe.
class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  virtual double lr(int64_t step) const = 0;
  virtual std::string describe() const = 0;
};

class ConstantLr final : public LrSchedule {
 public:
  explicit ConstantLr(double base_lr);  // REQUIRES: base_lr > 0
  double lr(int64_t step) const override;
  std::string describe() const override;

 private:
  const double base_lr_;
};

// base_lr * gamma^(step / step_size) (torch.optim.lr_scheduler.StepLR counted in steps).
class StepLr final : public LrSchedule {
 public:
  // REQUIRES: base_lr > 0, step_size >= 1, gamma > 0.
  StepLr(double base_lr, int64_t step_size, double gamma);
  double lr(int64_t step) const override;
  std::string describe() const override;

 private:
  const double base_lr_;
  const int64_t step_size_;
  const double gamma_;
};

// Linear warm-up from base_lr / warmup_steps to base_lr over the first warmup_steps steps, then
// cosine decay to min_lr at total_steps (and min_lr after).
class CosineLr final : public LrSchedule {
 public:
  // REQUIRES: base_lr > 0, 0 <= warmup_steps < total_steps, 0 <= min_lr <= base_lr.
  CosineLr(double base_lr, int64_t warmup_steps, int64_t total_steps, double min_lr = 0.0);
  double lr(int64_t step) const override;
  std::string describe() const override;

 private:
  const double base_lr_;
  const int64_t warmup_steps_, total_steps_;
  const double min_lr_;
};

// The learning rate for `batch` given one tuned at `base_batch`: linear scaling (Goyal et al.,
// for SGD) lr * batch / base_batch; square-root scaling (common for Adam) lr *
// sqrt(batch / base_batch). REQUIRES: base_batch, batch >= 1 (else std::invalid_argument).
double scale_lr_linear(double base_lr, int64_t base_batch, int64_t batch);
double scale_lr_sqrt(double base_lr, int64_t base_batch, int64_t batch);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_OPTIM_LR_SCHEDULE_H_
