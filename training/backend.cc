#include "training/backend.h"

namespace tuner::training {

std::string_view activation_name(Activation act) {
  switch (act) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kGelu:
      return "gelu";
    case Activation::kTanh:
      return "tanh";
    case Activation::kSigmoid:
      return "sigmoid";
  }
  return "?";
}

bool activation_fusable(Activation act) { return act != Activation::kGelu; }

}  // namespace tuner::training
