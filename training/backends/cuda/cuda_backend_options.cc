// The checks of CudaBackendOptions that hold on every machine (built with CUDA or not), so a
// contradictory request fails the same way everywhere.
#include "training/backends/cuda/cuda_backend.h"

namespace tuner::training {

std::string cuda_options_invalid(const CudaBackendOptions& options) {
  if (options.convolution == Convolution::kCudnn && options.matmul != Precision::kFloat32) {
    return "cuDNN convolutions take fp32 products only (cuDNN's convolution API gives bf16 "
           "inputs bf16 outputs, not the fp32 outputs of bf16 mode): use the GEMM convolutions "
           "with bf16";
  }
  return "";
}

}  // namespace tuner::training
