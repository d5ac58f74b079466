// Device helpers shared by the CUDA kernels (internal, .cu files only): the activations with the
// CPU backend's formulas (backends/cpu/activation_math.h), the dropout hash (training/rng.cc),
// launch geometry and fixed-order reductions.
#ifndef TUNER_TRAINING_BACKENDS_CUDA_DEVICE_MATH_CUH_
#define TUNER_TRAINING_BACKENDS_CUDA_DEVICE_MATH_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "training/backends/cuda/kernels.h"

namespace tuner::training::cuda {

inline constexpr int kThreads = 256;
// Grid-stride kernels use at most this many blocks (enough to fill an H200 many times over).
inline constexpr int64_t kMaxBlocks = 8192;

// Blocks of kThreads for n elements handled by a grid-stride loop.
inline unsigned int grid_for(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned int>(std::max<int64_t>(1, std::min(blocks, kMaxBlocks)));
}

// The first index and stride of a 1-D grid-stride loop, in 64 bits.
__device__ __forceinline__ int64_t global_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t global_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// ---- Activations: the CPU's formulas (expf, erff and tanhf are the float functions the CPU's
// std:: overloads call; nvcc's are within 2 ulp of glibc's). ----
__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
__device__ __forceinline__ float gelu_grad(float x) {
  const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
  return cdf + x * pdf;
}
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float activate(int act, float v) {
  switch (act) {
    case kActRelu:
      return v > 0.0f ? v : 0.0f;
    case kActGelu:
      return gelu(v);
    case kActTanh:
      return tanhf(v);
    case kActSigmoid:
      return sigmoid(v);
    default:
      return v;
  }
}

// dy * act'(.) from the activation's output y, as the CPU's activation_grad_from_output (which
// passes dy through for none and gelu).
__device__ __forceinline__ float grad_from_output(int act, float y, float dy) {
  switch (act) {
    case kActRelu:
      return y > 0.0f ? dy : 0.0f;
    case kActTanh:
      return dy * (1.0f - y * y);
    case kActSigmoid:
      return dy * y * (1.0f - y);
    default:
      return dy;
  }
}

// splitmix64 of a value (training/rng.cc's mix64), bit for bit.
__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// ---- Fixed-order reductions. The shuffle tree pairs lanes the same way on every run. ----
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the block, returned to every thread. REQUIRES: blockDim.x a multiple of 32 and at
// most 1024; every thread of the block calls it.
template <typename T>
__device__ T block_sum(T v) {
  __shared__ T warp_sums[32];
  __shared__ T total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x >> 5;
    T w = lane < warps ? warp_sums[lane] : T(0);
    w = warp_sum(w);
    if (lane == 0) total = w;
  }
  __syncthreads();
  const T result = total;
  __syncthreads();  // warp_sums and total may be reused by the next call
  return result;
}

// Ends a one-value reduction: block b stores its sum (from thread 0) in partials[b]; the last
// block to finish sums the partials in a fixed tree into *result and resets the counter.
// REQUIRES: gridDim.x <= kMaxReduceBlocks; every thread of the block calls it.
__device__ inline void finish_reduction(double block_total, ReduceScratch scratch) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    scratch.partials[blockIdx.x] = block_total;
    __threadfence();  // the partial is visible before the counter says so
    last = atomicAdd(scratch.counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  double v = 0.0;
  for (unsigned int i = threadIdx.x; i < gridDim.x; i += blockDim.x)
    v += __ldcg(scratch.partials + i);
  v = block_sum(v);
  if (threadIdx.x == 0) {
    *scratch.result = v;
    *scratch.counter = 0u;
  }
}

}  // namespace tuner::training::cuda

#endif  // TUNER_TRAINING_BACKENDS_CUDA_DEVICE_MATH_CUH_
