// The optimizer interface: one update of a model's flat parameter array from its flat gradients.
#ifndef TUNER_TRAINING_OPTIM_OPTIMIZER_H_
#define TUNER_TRAINING_OPTIM_OPTIMIZER_H_

#include <cstdint>
#include <span>
#include <string>

namespace tuner::training {

// An optimizer works on the whole ParameterArena at once (values() and grads()), so its state is
// a few flat arrays of the same size, saved and restored as they are.
// Thread safety: one thread at a time.
class Optimizer {
 public:
  virtual ~Optimizer() = default;

  virtual std::string describe() const = 0;
  // One update at learning rate lr. REQUIRES: params.size() == grads.size() == the size given
  // at construction (else std::invalid_argument).
  virtual void step(std::span<float> params, std::span<const float> grads, float lr) = 0;
  // The state arrays back to back (velocity; or m then v), in the backend's memory, for
  // checkpoints (Backend::download and upload move them).
  virtual std::span<float> state() = 0;

  // Steps taken so far (restored with the state from a checkpoint).
  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }

 protected:
  int64_t steps_ = 0;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_OPTIM_OPTIMIZER_H_
