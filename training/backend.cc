#include "training/backend.h"

#include <algorithm>
#include <stdexcept>
#include <string>

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

namespace {
void check_sizes(const char* op, size_t from, size_t to) {
  if (from != to) {
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(from) + " values into " +
                                std::to_string(to));
  }
}
}  // namespace

void Backend::upload(std::span<const float> host, std::span<float> dst) {
  check_sizes("backend.upload", host.size(), dst.size());
  std::copy(host.begin(), host.end(), dst.begin());
}

void Backend::download(std::span<const float> src, std::span<float> host) {
  check_sizes("backend.download", src.size(), host.size());
  std::copy(src.begin(), src.end(), host.begin());
}

}  // namespace tuner::training
