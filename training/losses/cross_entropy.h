// Softmax cross-entropy with label smoothing (PyTorch's CrossEntropyLoss, mean reduction).
#ifndef TUNER_TRAINING_LOSSES_CROSS_ENTROPY_H_
#define TUNER_TRAINING_LOSSES_CROSS_ENTROPY_H_

#include <cstdint>
#include <span>

#include "training/backend.h"

namespace tuner::training {

// Thread safety: immutable after construction.
class SoftmaxCrossEntropy {
 public:
  // REQUIRES: 0 <= label_smoothing < 1 (else std::invalid_argument).
  explicit SoftmaxCrossEntropy(float label_smoothing = 0.0f);

  // Mean loss over the batch of logits[B,K] against labels[B] in [0, K); writes dlogits[B,K]
  // (d mean loss / d logits) unless nullptr. Throws ShapeError on a shape mismatch and
  // std::out_of_range on a label outside [0, K).
  float compute(Backend& backend, const Tensor& logits, std::span<const int32_t> labels,
                Tensor* dlogits) const;

  float label_smoothing() const { return label_smoothing_; }

 private:
  const float label_smoothing_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LOSSES_CROSS_ENTROPY_H_
