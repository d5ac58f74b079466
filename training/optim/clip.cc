#include "training/optim/clip.h"

#include <cmath>
#include <stdexcept>

namespace tuner::training {

double clip_grad_norm(Backend& backend, std::span<float> grads, double max_norm) {
  if (!(max_norm > 0.0)) throw std::invalid_argument("clip_grad_norm: max_norm must be > 0");
  const double norm = std::sqrt(backend.sum_squares(grads));
  if (norm > max_norm) backend.scale(grads, static_cast<float>(max_norm / (norm + 1e-6)));
  return norm;
}

}  // namespace tuner::training
