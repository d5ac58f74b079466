// The GPUs this process can use, as executors advertise them when they say HELLO.
#ifndef TUNER_TRAINING_DEVICE_GPU_INVENTORY_H_
#define TUNER_TRAINING_DEVICE_GPU_INVENTORY_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tuner::training {

struct GpuInfo {
  int index = 0;
  std::string name;
  uint64_t memory_bytes = 0;
  int compute_capability = 0;  // major * 10 + minor, e.g. 90 for Hopper
};

// True when this build has the CUDA backend.
bool built_with_cuda();

// The visible GPUs; empty when the build has no CUDA, or there is no driver or no device.
// `why_none`, when given, receives the reason for an empty list.
std::vector<GpuInfo> list_gpus(std::string* why_none = nullptr);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DEVICE_GPU_INVENTORY_H_
