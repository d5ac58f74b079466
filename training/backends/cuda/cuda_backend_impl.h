// The CUDA backend's class and its RAII helpers (internal: included by the *_cuda.cc files only,
// which keeps the CUDA headers out of cuda_backend.h).
#ifndef TUNER_TRAINING_BACKENDS_CUDA_CUDA_BACKEND_IMPL_H_
#define TUNER_TRAINING_BACKENDS_CUDA_CUDA_BACKEND_IMPL_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "training/backend.h"
#include "training/backends/cuda/cuda_backend.h"
#include "training/backends/cuda/kernels.h"

namespace tuner::training {

// A failed CUDA runtime or cuBLAS call, or a launch the device refused. The message names the
// call, the driver's error string, the op with its argument shapes, and the source line.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace cuda {

[[noreturn]] void throw_error(const char* call, const char* error, std::string_view op,
                              const std::string& args, const char* file, int line);

// " x[128, 784] w[512, 784] bias=none ..." for error messages (built only on failure).
inline void append_args(std::string&) {}
template <typename... Rest>
void append_args(std::string& out, const char* name, const Tensor& t, const Rest&... rest);
template <typename... Rest>
void append_args(std::string& out, const char* name, const Tensor* t, const Rest&... rest);
template <typename... Rest>
void append_args(std::string& out, const char* name, int64_t v, const Rest&... rest);
template <typename... Rest>
void append_args(std::string& out, const char* name, const Tensor* t, const Rest&... rest) {
  out += ' ';
  out += name;
  out += t != nullptr ? t->shape().to_string() : std::string("=none");
  append_args(out, rest...);
}
template <typename... Rest>
void append_args(std::string& out, const char* name, const Tensor& t, const Rest&... rest) {
  append_args(out, name, &t, rest...);
}
template <typename... Rest>
void append_args(std::string& out, const char* name, int64_t v, const Rest&... rest) {
  out += ' ';
  out += name;
  out += '=';
  out += std::to_string(v);
  append_args(out, rest...);
}
template <typename... Args>
std::string args(const Args&... a) {
  std::string out;
  append_args(out, a...);
  return out;
}

}  // namespace cuda

// Checks a cudaError_t; `op` and `ARGS` (a cuda::args(...) expression, evaluated only on failure)
// say which op of the backend made the call.
#define TUNER_CUDA_CHECK(expr, op, ARGS)                                                      \
  do {                                                                                        \
    const cudaError_t tuner_cuda_status_ = (expr);                                            \
    if (tuner_cuda_status_ != cudaSuccess) {                                                  \
      ::tuner::training::cuda::throw_error(#expr, cudaGetErrorString(tuner_cuda_status_), op, \
                                           ARGS, __FILE__, __LINE__);                         \
    }                                                                                         \
  } while (0)
#define TUNER_CUBLAS_CHECK(expr, op, ARGS)                                                         \
  do {                                                                                             \
    const cublasStatus_t tuner_cublas_status_ = (expr);                                            \
    if (tuner_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                           \
      ::tuner::training::cuda::throw_error(#expr, cublasGetStatusString(tuner_cublas_status_), op, \
                                           ARGS, __FILE__, __LINE__);                              \
    }                                                                                              \
  } while (0)

namespace cuda {

class CudnnConvolutions;  // cudnn_conv.h

struct StreamDeleter {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct CublasDeleter {
  void operator()(cublasHandle_t h) const { cublasDestroy(h); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
using StreamPtr = std::unique_ptr<CUstream_st, StreamDeleter>;
using CublasPtr = std::unique_ptr<cublasContext, CublasDeleter>;
using EventPtr = std::unique_ptr<CUevent_st, EventDeleter>;

// Device memory that grows on demand. Growing waits for `stream` first, since kernels in flight
// may still read the old block. Thread safety: none (owned by one backend).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // At least `bytes` of device memory (contents unspecified after a growth).
  void* reserve(size_t bytes, cudaStream_t stream, std::string_view op);
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory that grows on demand. REQUIRES: no copy from it is in flight when it
// grows (callers wait on the event of its last copy).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { cudaFreeHost(data_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* reserve(size_t bytes, std::string_view op);
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace cuda

// Tensors live in device memory from cudaMalloc; every kernel and cuBLAS call runs on the
// backend's one stream, so ops are ordered without host waits. The host waits only in download,
// synchronize, and the ops that return a value (the losses, sum_squares). GEMMs are cuBLAS on
// row-major data, fp32 (no TF32) or, with Precision::kBfloat16, bf16 copies of both inputs in
// scratch with fp32 accumulation and output (CudaBackendOptions); convolutions are im2col + those
// GEMMs or, with Convolution::kCudnn, cuDNN's (cudnn_conv.h); everything else is a kernel of
// kernels.h mirroring the CPU twin.
// Thread safety: as Backend (one caller at a time); the calling thread's current device must be
// `device` (the constructor makes it so on the constructing thread).
class CudaBackend final : public Backend {
 public:
  // REQUIRES: cuda_backend_unavailable(device) is empty (cudnn_unavailable(device), for
  // Convolution::kCudnn); cuda_options_invalid(options) is empty.
  CudaBackend(int device, CudaBackendOptions options);
  ~CudaBackend() override;

  std::string_view name() const override {
    if (options_.matmul == Precision::kBfloat16) return "cuda-bf16";
    return options_.convolution == Convolution::kCudnn ? "cuda-cudnn" : "cuda";
  }
  int num_threads() const override { return 1; }
  cudaStream_t stream() const { return stream_.get(); }

  Tensor allocate(const Shape& shape) override;
  bool host_accessible() const override { return false; }
  void upload(std::span<const float> host, std::span<float> dst) override;
  void download(std::span<const float> src, std::span<float> host) override;
  void synchronize() override;

  void gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b, float beta,
            Tensor& c) override;
  void linear_forward(const Tensor& x, const Tensor& w, const Tensor* bias, Activation act,
                      Tensor& y) override;
  void linear_backward(const Tensor& x, const Tensor& w, const Tensor& y, Activation act,
                       const Tensor& dy, Tensor& dz, Tensor* dx, Tensor& dw, Tensor* db) override;

  int64_t conv2d_backward_workspace(const Window2d& win, const Shape& x,
                                    int64_t out_channels) const override;
  void conv2d_forward(const Window2d& win, const Tensor& x, const Tensor& w, const Tensor* bias,
                      Activation act, Tensor& col, Tensor& y) override;
  void conv2d_backward(const Window2d& win, const Tensor& x, const Tensor& w, const Tensor& col,
                       const Tensor& y, Activation act, const Tensor& dy, Tensor& dz, Tensor* dx,
                       Tensor& dw, Tensor* db, std::span<float> work) override;

  void max_pool2d_forward(const Window2d& win, const Tensor& x, Tensor& y,
                          std::span<int32_t> argmax) override;
  void max_pool2d_backward(const Window2d& win, std::span<const int32_t> argmax, const Tensor& dy,
                           Tensor& dx) override;
  void avg_pool2d_forward(const Window2d& win, const Tensor& x, Tensor& y) override;
  void avg_pool2d_backward(const Window2d& win, const Tensor& dy, Tensor& dx) override;
  void global_avg_pool_forward(const Tensor& x, Tensor& y) override;
  void global_avg_pool_backward(const Tensor& dy, Tensor& dx) override;

  void activation_forward(Activation act, const Tensor& x, Tensor& y) override;
  void activation_backward(Activation act, const Tensor& x, const Tensor& y, const Tensor& dy,
                           Tensor& dx) override;
  void dropout_forward(float p, uint64_t seed, const Tensor& x, Tensor& mask, Tensor& y) override;
  void mul(const Tensor& a, const Tensor& b, Tensor& y) override;
  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
  void copy(const Tensor& x, Tensor& y) override;

  void batch_norm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                float momentum, Tensor& running_mean, Tensor& running_var,
                                Tensor& mean, Tensor& rstd, Tensor& y) override;
  void batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                               const Tensor& running_mean, const Tensor& running_var,
                               Tensor& y) override;
  void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                           const Tensor& rstd, const Tensor& dy, Tensor* dx, Tensor& dgamma,
                           Tensor& dbeta) override;
  void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                          Tensor& mean, Tensor& rstd, Tensor& y) override;
  void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                           const Tensor& rstd, const Tensor& dy, Tensor* dx, Tensor& dgamma,
                           Tensor& dbeta) override;

  float softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels,
                              float label_smoothing, Tensor* dlogits) override;
  float mean_squared_error(const Tensor& pred, const Tensor& target, Tensor* dpred) override;

  void sgd_step(const SgdStepArgs& args, std::span<float> params, std::span<const float> grads,
                std::span<float> velocity) override;
  void adam_step(const AdamStepArgs& args, std::span<float> params, std::span<const float> grads,
                 std::span<float> m, std::span<float> v) override;
  double sum_squares(std::span<const float> x) override;
  void scale(std::span<float> x, float factor) override;

 private:
  // Row-major c[m,n] = alpha op(a) op(b) + beta c for `batch` products whose operands are
  // `stride_*` floats apart (0: one operand shared by all); lda, ldb, ldc are the row lengths of
  // the stored matrices. Runs cuBLAS on the column-major transposes (c^T = op(b)^T op(a)^T), in
  // the input precision of options_.matmul.
  void gemm_rows(const char* op, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb,
                 int64_t stride_b, float beta, float* c, int64_t ldc, int64_t stride_c,
                 int64_t batch);
  // gemm_rows with Precision::kBfloat16: rounds both operands into bf16_ (rows padded to a
  // multiple of 8 elements), then one cublasGemmEx / cublasGemmStridedBatchedEx with bf16 A and
  // B, fp32 C and CUBLAS_COMPUTE_32F. Arguments as gemm_rows; m, n, batch > 0.
  void gemm_rows_bf16(const char* op, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                      float alpha, const float* a, int64_t lda, int64_t stride_a, const float* b,
                      int64_t ldb, int64_t stride_b, float beta, float* c, int64_t ldc,
                      int64_t stride_c, int64_t batch);
  // Copies `bytes` of host memory to device memory `dst` through a pinned staging buffer without
  // waiting for the copy (only for the buffer's previous copy, two uploads back).
  void stage_upload(const void* host, void* dst, size_t bytes, const char* op);
  // Waits for the one-value reduction launched last and returns its result.
  double read_result(const char* op);
  cuda::ReduceScratch reduce_scratch() const;
  // conv2d_backward through cudnn_ (Convolution::kCudnn); arguments as conv2d_backward's, with
  // work holding conv2d_backward_workspace floats.
  void conv2d_backward_cudnn(const Window2d& win, const Tensor& x, const Tensor& w, const Tensor& y,
                             Activation act, const Tensor& dy, Tensor& dz, Tensor* dx, Tensor& dw,
                             Tensor* db, std::span<float> work);

  // Constant after construction.
  int device_;
  CudaBackendOptions options_;
  cuda::StreamPtr stream_;
  cuda::CublasPtr cublas_;
  std::unique_ptr<cuda::CudnnConvolutions> cudnn_;  // null unless Convolution::kCudnn

  // Scratch, used by one op at a time.
  struct Staging {
    cuda::PinnedBuffer host;
    cuda::EventPtr copied;  // recorded after the last copy out of `host`
    bool in_flight = false;
  };
  std::array<Staging, 2> staging_;
  int next_staging_ = 0;
  cuda::DeviceBuffer labels_;  // int32 labels of softmax_cross_entropy
  cuda::DeviceBuffer reduce_;  // partials[kMaxReduceBlocks], result, counter
  // The bf16 copies of one product's two operands (gemm_rows_bf16). It grows to the largest
  // product of the first step and is reused in stream order after that (no allocation later).
  cuda::DeviceBuffer bf16_;
  cuda::PinnedBuffer result_host_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_BACKENDS_CUDA_CUDA_BACKEND_IMPL_H_
