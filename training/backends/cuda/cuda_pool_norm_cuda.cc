// The CUDA backend's pooling and normalization ops (kernels in conv_pool.cu and norm.cu).
#include <algorithm>

#include "training/backends/cuda/cuda_backend_impl.h"

namespace tuner::training {
namespace {

cuda::Window window_of(const Window2d& w) { return {w.kernel_h, w.kernel_w, w.stride, w.padding}; }

// Spatial extent S of x[B,C,S...] (1 for [B,C]).
int64_t spatial(const Tensor& x) {
  int64_t s = 1;
  for (int i = 2; i < x.rank(); ++i) s *= x.dim(i);
  return s;
}

}  // namespace

void CudaBackend::max_pool2d_forward(const Window2d& win, const Tensor& x, Tensor& y,
                                     std::span<int32_t> argmax) {
  TUNER_CUDA_CHECK(cuda::launch_max_pool_forward(y.data(), argmax.data(), x.data(),
                                                 x.dim(0) * x.dim(1), x.dim(2), x.dim(3), y.dim(2),
                                                 y.dim(3), window_of(win), stream_.get()),
                   "max_pool2d_forward",
                   cuda::args("x", x, "y", y, "argmax", static_cast<int64_t>(argmax.size())));
}

void CudaBackend::max_pool2d_backward(const Window2d& win, std::span<const int32_t> argmax,
                                      const Tensor& dy, Tensor& dx) {
  TUNER_CUDA_CHECK(cuda::launch_max_pool_backward(
                       dx.data(), argmax.data(), dy.data(), dx.dim(0) * dx.dim(1), dx.dim(2),
                       dx.dim(3), dy.dim(2), dy.dim(3), window_of(win), stream_.get()),
                   "max_pool2d_backward",
                   cuda::args("dy", dy, "dx", dx, "argmax", static_cast<int64_t>(argmax.size())));
}

void CudaBackend::avg_pool2d_forward(const Window2d& win, const Tensor& x, Tensor& y) {
  TUNER_CUDA_CHECK(
      cuda::launch_avg_pool_forward(y.data(), x.data(), x.dim(0) * x.dim(1), x.dim(2), x.dim(3),
                                    y.dim(2), y.dim(3), window_of(win), stream_.get()),
      "avg_pool2d_forward", cuda::args("x", x, "y", y));
}

void CudaBackend::avg_pool2d_backward(const Window2d& win, const Tensor& dy, Tensor& dx) {
  TUNER_CUDA_CHECK(cuda::launch_avg_pool_backward(dx.data(), dy.data(), dx.dim(0) * dx.dim(1),
                                                  dx.dim(2), dx.dim(3), dy.dim(2), dy.dim(3),
                                                  window_of(win), stream_.get()),
                   "avg_pool2d_backward", cuda::args("dy", dy, "dx", dx));
}

void CudaBackend::global_avg_pool_forward(const Tensor& x, Tensor& y) {
  TUNER_CUDA_CHECK(cuda::launch_global_avg_pool_forward(y.data(), x.data(), x.dim(0) * x.dim(1),
                                                        spatial(x), stream_.get()),
                   "global_avg_pool_forward", cuda::args("x", x, "y", y));
}

void CudaBackend::global_avg_pool_backward(const Tensor& dy, Tensor& dx) {
  TUNER_CUDA_CHECK(cuda::launch_global_avg_pool_backward(
                       dx.data(), dy.data(), dx.dim(0) * dx.dim(1), spatial(dx), stream_.get()),
                   "global_avg_pool_backward", cuda::args("dy", dy, "dx", dx));
}

void CudaBackend::batch_norm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                           float eps, float momentum, Tensor& running_mean,
                                           Tensor& running_var, Tensor& mean, Tensor& rstd,
                                           Tensor& y) {
  TUNER_CUDA_CHECK(
      cuda::launch_batch_norm_train(y.data(), mean.data(), rstd.data(), running_mean.data(),
                                    running_var.data(), x.data(), gamma.data(), beta.data(),
                                    x.dim(0), x.dim(1), spatial(x), eps, momentum, stream_.get()),
      "batch_norm_forward_train", cuda::args("x", x, "gamma", gamma, "y", y));
}

void CudaBackend::batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          float eps, const Tensor& running_mean,
                                          const Tensor& running_var, Tensor& y) {
  TUNER_CUDA_CHECK(cuda::launch_batch_norm_eval(y.data(), x.data(), gamma.data(), beta.data(),
                                                running_mean.data(), running_var.data(), x.dim(0),
                                                x.dim(1), spatial(x), eps, stream_.get()),
                   "batch_norm_forward_eval", cuda::args("x", x, "gamma", gamma, "y", y));
}

void CudaBackend::batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                      const Tensor& rstd, const Tensor& dy, Tensor* dx,
                                      Tensor& dgamma, Tensor& dbeta) {
  TUNER_CUDA_CHECK(
      cuda::launch_batch_norm_backward(
          dx != nullptr ? dx->data() : nullptr, dgamma.data(), dbeta.data(), x.data(), gamma.data(),
          mean.data(), rstd.data(), dy.data(), x.dim(0), x.dim(1), spatial(x), stream_.get()),
      "batch_norm_backward", cuda::args("x", x, "gamma", gamma, "dy", dy, "dx", dx));
}

void CudaBackend::layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                     float eps, Tensor& mean, Tensor& rstd, Tensor& y) {
  const int64_t rows = x.dim(0), d = x.numel() / std::max<int64_t>(rows, 1);
  TUNER_CUDA_CHECK(
      cuda::launch_layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(),
                                      beta.data(), rows, d, eps, stream_.get()),
      "layer_norm_forward", cuda::args("x", x, "gamma", gamma, "y", y));
}

void CudaBackend::layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                      const Tensor& rstd, const Tensor& dy, Tensor* dx,
                                      Tensor& dgamma, Tensor& dbeta) {
  const int64_t rows = x.dim(0), d = x.numel() / std::max<int64_t>(rows, 1);
  TUNER_CUDA_CHECK(cuda::launch_layer_norm_backward(
                       dx != nullptr ? dx->data() : nullptr, dgamma.data(), dbeta.data(), x.data(),
                       gamma.data(), mean.data(), rstd.data(), dy.data(), rows, d, stream_.get()),
                   "layer_norm_backward", cuda::args("x", x, "gamma", gamma, "dy", dy, "dx", dx));
}

}  // namespace tuner::training
