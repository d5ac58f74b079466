// Mean squared error (PyTorch's MSELoss, mean reduction over all elements).
#ifndef TUNER_TRAINING_LOSSES_MEAN_SQUARED_ERROR_H_
#define TUNER_TRAINING_LOSSES_MEAN_SQUARED_ERROR_H_

#include "training/backend.h"

namespace tuner::training {

// Thread safety: stateless.
class MeanSquaredError {
 public:
  // mean((pred - target)^2) for pred and target of one shape [B, ...]; writes dpred unless
  // nullptr. Throws ShapeError on a shape mismatch.
  float compute(Backend& backend, const Tensor& pred, const Tensor& target, Tensor* dpred) const;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LOSSES_MEAN_SQUARED_ERROR_H_
