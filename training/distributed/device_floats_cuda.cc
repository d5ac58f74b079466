#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "training/distributed/device_floats.h"

namespace tuner::training {
namespace {

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("DeviceFloats: ") + call + ": " + cudaGetErrorName(e) +
                             " (" + cudaGetErrorString(e) + ")");
  }
}

}  // namespace

DeviceFloats::DeviceFloats(int device, size_t n) : device_(device), n_(n) {
  check(cudaSetDevice(device_), "cudaSetDevice");
  check(cudaMalloc(&data_, (n_ == 0 ? 1 : n_) * sizeof(float)), "cudaMalloc");
  cudaError_t e = cudaMemset(data_, 0, n_ * sizeof(float));
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    cudaFree(data_);  // the destructor does not run
    check(e, "cudaMemset");
  }
}

DeviceFloats::~DeviceFloats() {
  cudaSetDevice(device_);
  cudaFree(data_);
}

void DeviceFloats::upload(std::span<const float> values) {
  if (values.size() != n_) {
    throw std::invalid_argument("DeviceFloats::upload: " + std::to_string(values.size()) +
                                " values into " + std::to_string(n_) + " floats");
  }
  check(cudaSetDevice(device_), "cudaSetDevice");
  check(cudaMemcpy(data_, values.data(), n_ * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
}

std::vector<float> DeviceFloats::download() const {
  std::vector<float> values(n_);
  check(cudaSetDevice(device_), "cudaSetDevice");
  check(cudaMemcpy(values.data(), data_, n_ * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  return values;
}

}  // namespace tuner::training
