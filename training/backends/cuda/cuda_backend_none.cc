// Stand-in for builds without CUDA: the CUDA backend cannot be made, and says why.
#include <stdexcept>

#include "training/backends/cuda/cuda_backend.h"

namespace tuner::training {

std::string cuda_backend_unavailable(int /*device*/) {
  return "built without CUDA (no nvcc found at configure time)";
}

std::string cudnn_unavailable(int device) { return cuda_backend_unavailable(device); }

std::unique_ptr<Backend> make_cuda_backend(int device, CudaBackendOptions options) {
  const std::string invalid = cuda_options_invalid(options);
  if (!invalid.empty()) throw std::invalid_argument("make_cuda_backend: " + invalid);
  throw std::runtime_error("make_cuda_backend: " + cuda_backend_unavailable(device));
}

void* cuda_stream_of(Backend& /*backend*/) { return nullptr; }

}  // namespace tuner::training
