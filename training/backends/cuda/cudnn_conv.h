// The cuDNN convolutions of the CUDA backend (Convolution::kCudnn; internal: included by the
// *_cuda.cc and *cudnn.cc files only). The interface keeps cudnn.h out of every other file, so
// that a build without cuDNN compiles cudnn_conv_nocudnn.cc in place of cudnn_conv_cudnn.cc.
#ifndef TUNER_TRAINING_BACKENDS_CUDA_CUDNN_CONV_H_
#define TUNER_TRAINING_BACKENDS_CUDA_CUDNN_CONV_H_

#include <cuda_runtime.h>

#include <memory>

#include "training/backend.h"
#include "training/tensor.h"

namespace tuner::training::cuda {

// The three products of a convolution through cuDNN, on one stream. Each overwrites its output
// (alpha 1, beta 0): no bias, no activation (the backend's kernels add those). Descriptors and
// the algorithm choice are made once per shape (x, output channels, window) and cached; cuDNN's
// workspace is one device buffer that grows to the largest need and is then reused.
// Thread safety: none (owned by one backend, used by one thread at a time).
class CudnnConvolutions {
 public:
  virtual ~CudnnConvolutions() = default;

  // y[B,O,OH,OW] = cross-correlation of x[B,C,H,W] with w[O,C,KH,KW].
  virtual void forward(const Window2d& win, const Tensor& x, const Tensor& w, Tensor& y) = 0;
  // dx[B,C,H,W] = the gradient of forward's y with respect to x, for dy[B,O,OH,OW].
  virtual void backward_data(const Window2d& win, const Tensor& w, const Tensor& dy,
                             Tensor& dx) = 0;
  // dw[O,C,KH,KW] = the gradient of forward's y with respect to w, summed over the batch.
  virtual void backward_filter(const Window2d& win, const Tensor& x, const Tensor& dy,
                               Tensor& dw) = 0;
};

// A cuDNN handle on `stream`. REQUIRES: cudnn_unavailable(device) is empty and `device` is the
// calling thread's current device. Throws CudaError naming the failed cuDNN call.
std::unique_ptr<CudnnConvolutions> make_cudnn_convolutions(int device, cudaStream_t stream);

}  // namespace tuner::training::cuda

#endif  // TUNER_TRAINING_BACKENDS_CUDA_CUDNN_CONV_H_
