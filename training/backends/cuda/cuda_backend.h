// The CUDA backend: tensors in device memory, GEMMs through cuBLAS, convolutions through cuBLAS
// or cuDNN, fused kernels for the element-wise work, everything on one stream per backend. Built
// when nvcc is found (TUNER_HAVE_CUDA); elsewhere make_cuda_backend says why it cannot be made.
#ifndef TUNER_TRAINING_BACKENDS_CUDA_CUDA_BACKEND_H_
#define TUNER_TRAINING_BACKENDS_CUDA_CUDA_BACKEND_H_

#include <memory>
#include <string>

#include "training/backend.h"

namespace tuner::training {

// Empty when a CUDA backend can be made on `device`; else why not ("built without CUDA",
// "no CUDA device: <driver's message>", "device 3 of 1").
std::string cuda_backend_unavailable(int device = 0);

// Empty when a CUDA backend with cuDNN convolutions (Convolution::kCudnn) can be made on
// `device`; else why not (cuda_backend_unavailable's reason, "built without cuDNN ...", or a
// cuDNN library whose major version is not the one built against).
std::string cudnn_unavailable(int device = 0);

// How a CUDA backend runs conv2d_forward and conv2d_backward (and so conv2d_pool_*, which the
// CUDA backend runs as the pair).
enum class Convolution {
  // im2col into `col`, then strided-batched cuBLAS GEMMs; dw from per-sample products summed in
  // sample order; dx folded back by a gather (col2im).
  kGemm,
  // cuDNN's convolutions (cudnnConvolutionForward / BackwardData / BackwardFilter, NCHW fp32,
  // cross-correlation as the CPU computes it), with the GEMM path's own kernels for the bias,
  // the activation, dz and db. fp32 FMA math only (no TF32); for each shape, the first
  // deterministic algorithm of cuDNN's heuristics (not of timed trials, which could pick another
  // algorithm, so other bits, on another run) whose workspace fits 256 MiB; so results are
  // bit-reproducible on one GPU model and cuDNN version. `col` is left unwritten. cuDNN's own
  // workspace is backend scratch that grows during the first step only.
  kCudnn,
};

struct CudaBackendOptions {
  // Input precision of every GEMM of gemm, linear_* and conv2d_* (default kFloat32: full fp32
  // products, no TF32). kBfloat16 is autocast-style mixed precision: each product rounds its two
  // input operands to bf16 (round to nearest even) in backend scratch and multiplies them on the
  // tensor cores with fp32 accumulation and an fp32 output. Everything else stays fp32: tensors,
  // activations, gradients, master weights, optimizer state, and the non-GEMM kernels. Products
  // then match fp32 to about 1e-2 * sqrt(K) of their terms' scale (K: the reduction length), and
  // a backend in this mode reports name() "cuda-bf16". Results stay bit-reproducible.
  Precision matmul = Precision::kFloat32;
  // The convolution path (default kGemm). With kCudnn a backend reports name() "cuda-cudnn".
  // REQUIRES: matmul == kFloat32 for kCudnn (cuda_options_invalid).
  Convolution convolution = Convolution::kGemm;
};

// Why `options` cannot make a CUDA backend (empty when they can): kCudnn takes fp32 products
// only, since cuDNN's legacy convolution API takes bf16 inputs only with bf16 outputs (x, w, y
// all bf16: PSEUDO_BFLOAT16_CONFIG), which would round the outputs and the gradients and break
// Precision::kBfloat16's fp32 outputs. Use kGemm for bf16 convolutions.
std::string cuda_options_invalid(const CudaBackendOptions& options);

// Throws std::invalid_argument with cuda_options_invalid's reason for options that contradict
// each other, and std::runtime_error with cuda_backend_unavailable's reason (cudnn_unavailable's,
// for kCudnn) when it cannot be made.
std::unique_ptr<Backend> make_cuda_backend(int device = 0, CudaBackendOptions options = {});

// The cudaStream_t a CUDA backend runs its kernels on, as void* (nullptr for other backends), so
// that a NcclCommunicator's collectives wait for the kernels that write the gradients
// (NcclCommunicator::set_producer_stream).
void* cuda_stream_of(Backend& backend);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_BACKENDS_CUDA_CUDA_BACKEND_H_
