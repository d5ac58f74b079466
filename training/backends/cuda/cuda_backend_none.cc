// Stand-in for builds without CUDA: the CUDA backend cannot be made, and says why.
#include <stdexcept>

#include "training/backends/cuda/cuda_backend.h"

namespace tuner::training {

std::string cuda_backend_unavailable(int /*device*/) {
  return "built without CUDA (no nvcc found at configure time)";
}

std::unique_ptr<Backend> make_cuda_backend(int device, CudaBackendOptions /*options*/) {
  throw std::runtime_error("make_cuda_backend: " + cuda_backend_unavailable(device));
}

void* cuda_stream_of(Backend& /*backend*/) { return nullptr; }

}  // namespace tuner::training
