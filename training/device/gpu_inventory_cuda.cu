#include <cuda_runtime.h>

#include "training/device/gpu_inventory.h"

namespace tuner::training {

bool built_with_cuda() { return true; }

std::vector<GpuInfo> list_gpus(std::string* why_none) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    if (why_none) {
      *why_none = status != cudaSuccess ? std::string("CUDA: ") + cudaGetErrorString(status)
                                        : std::string("CUDA: no device");
    }
    return {};
  }
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    gpus.push_back(
        {i, prop.name, static_cast<uint64_t>(prop.totalGlobalMem), prop.major * 10 + prop.minor});
  }
  return gpus;
}

}  // namespace tuner::training
