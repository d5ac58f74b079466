#include "training/losses/cross_entropy.h"

#include <stdexcept>
#include <string>

#include "training/layer.h"
#include "training/shape_error.h"

namespace tuner::training {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(float label_smoothing)
    : label_smoothing_(label_smoothing) {
  if (!(label_smoothing >= 0.0f && label_smoothing < 1.0f)) {
    throw std::invalid_argument("cross_entropy: label_smoothing must be in [0, 1)");
  }
}

float SoftmaxCrossEntropy::compute(Backend& backend, const Tensor& logits,
                                   std::span<const int32_t> labels, Tensor* dlogits) const {
  if (logits.rank() != 2 || logits.dim(0) < 1 || logits.dim(1) < 1 ||
      static_cast<int64_t>(labels.size()) != logits.dim(0)) {
    throw_shape_error("cross_entropy", "logits have shape " + logits.shape().to_string() +
                                           " and labels " + std::to_string(labels.size()) +
                                           " entries, expected [B, K] and B");
  }
  if (!logits.is_contiguous()) throw_shape_error("cross_entropy", "logits are not contiguous");
  if (dlogits != nullptr) check_shape("cross_entropy", "dlogits", *dlogits, logits.shape());
  const int64_t k = logits.dim(1);
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= k) {
      throw std::out_of_range("cross_entropy: label " + std::to_string(labels[i]) + " of sample " +
                              std::to_string(i) + " is outside [0, " + std::to_string(k) + ")");
    }
  }
  return backend.softmax_cross_entropy(logits, labels, label_smoothing_, dlogits);
}

}  // namespace tuner::training
