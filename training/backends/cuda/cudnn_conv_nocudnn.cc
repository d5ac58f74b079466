// Stand-in for CUDA builds without cuDNN: Convolution::kCudnn cannot be used, and says why.
#include <stdexcept>
#include <string>

#include "training/backends/cuda/cuda_backend.h"
#include "training/backends/cuda/cudnn_conv.h"

namespace tuner::training {

std::string cudnn_unavailable(int /*device*/) {
  return "built without cuDNN (cuDNN >= 8's cudnn.h not found at configure time; set "
         "CUDNN_ROOT)";
}

namespace cuda {

std::unique_ptr<CudnnConvolutions> make_cudnn_convolutions(int device, cudaStream_t /*stream*/) {
  throw std::runtime_error("make_cudnn_convolutions: " + cudnn_unavailable(device));
}

}  // namespace cuda
}  // namespace tuner::training
