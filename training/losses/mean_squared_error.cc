#include "training/losses/mean_squared_error.h"

#include "training/layer.h"
#include "training/shape_error.h"

namespace tuner::training {

float MeanSquaredError::compute(Backend& backend, const Tensor& pred, const Tensor& target,
                                Tensor* dpred) const {
  if (pred.rank() < 1 || pred.numel() < 1) {
    throw_shape_error("mse", "pred has shape " + pred.shape().to_string() + ", expected [B, ...]");
  }
  check_shape("mse", "target", target, pred.shape());
  check_shape("mse", "pred", pred, pred.shape());
  if (dpred != nullptr) check_shape("mse", "dpred", *dpred, pred.shape());
  return backend.mean_squared_error(pred, target, dpred);
}

}  // namespace tuner::training
