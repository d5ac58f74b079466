// The CUDA backend: tensors in device memory, GEMMs through cuBLAS, fused kernels for the
// element-wise work, everything on one stream per backend. Built when nvcc is found
// (TUNER_HAVE_CUDA); elsewhere make_cuda_backend says why it cannot be made.
#ifndef TUNER_TRAINING_BACKENDS_CUDA_CUDA_BACKEND_H_
#define TUNER_TRAINING_BACKENDS_CUDA_CUDA_BACKEND_H_

#include <memory>
#include <string>

#include "training/backend.h"

namespace tuner::training {

// Empty when a CUDA backend can be made on `device`; else why not ("built without CUDA",
// "no CUDA device: <driver's message>", "device 3 of 1").
std::string cuda_backend_unavailable(int device = 0);

// The element type a CUDA backend's matrix products read their inputs in.
enum class Precision { kFloat32, kBfloat16 };

struct CudaBackendOptions {
  // Input precision of every GEMM of gemm, linear_* and conv2d_* (default kFloat32: full fp32
  // products, no TF32). kBfloat16 is autocast-style mixed precision: each product rounds its two
  // input operands to bf16 (round to nearest even) in backend scratch and multiplies them on the
  // tensor cores with fp32 accumulation and an fp32 output. Everything else stays fp32: tensors,
  // activations, gradients, master weights, optimizer state, and the non-GEMM kernels. Products
  // then match fp32 to about 1e-2 * sqrt(K) of their terms' scale (K: the reduction length), and
  // a backend in this mode reports name() "cuda-bf16". Results stay bit-reproducible.
  Precision matmul = Precision::kFloat32;
};

// Throws std::runtime_error with cuda_backend_unavailable's reason when it cannot be made.
std::unique_ptr<Backend> make_cuda_backend(int device = 0, CudaBackendOptions options = {});

// The cudaStream_t a CUDA backend runs its kernels on, as void* (nullptr for other backends), so
// that a NcclCommunicator's collectives wait for the kernels that write the gradients
// (NcclCommunicator::set_producer_stream).
void* cuda_stream_of(Backend& backend);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_BACKENDS_CUDA_CUDA_BACKEND_H_
