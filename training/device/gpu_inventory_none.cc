// The inventory of a build without CUDA.
#include "training/device/gpu_inventory.h"

namespace tuner::training {

bool built_with_cuda() { return false; }

std::vector<GpuInfo> list_gpus(std::string* why_none) {
  if (why_none) *why_none = "this build has no CUDA backend (configure with -DTUNER_CUDA=ON)";
  return {};
}

}  // namespace tuner::training
