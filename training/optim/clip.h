// Gradient clipping by global norm.
#ifndef TUNER_TRAINING_OPTIM_CLIP_H_
#define TUNER_TRAINING_OPTIM_CLIP_H_

#include <span>

#include "training/backend.h"

namespace tuner::training {

// torch.nn.utils.clip_grad_norm_: computes the L2 norm of all of `grads` and, when it exceeds
// max_norm, scales them by max_norm / (norm + 1e-6). Returns the norm before clipping.
// REQUIRES: max_norm > 0 (else std::invalid_argument).
double clip_grad_norm(Backend& backend, std::span<float> grads, double max_norm);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_OPTIM_CLIP_H_
