// Losses and one-value reductions of the CUDA backend: one launch each. Every block reduces its
// share in a fixed tree and the last block to finish sums the block partials (finish_reduction),
// so the value is bit-identical from run to run; the host reads it from scratch.result.
#include "training/backends/cuda/device_math.cuh"
#include "training/backends/cuda/kernels.h"

namespace tuner::training::cuda {
namespace {

constexpr int kWarpsPerBlock = kThreads / 32;

unsigned int reduce_grid(int64_t n, int64_t per_block) {
  const int64_t blocks = (n + per_block - 1) / per_block;
  return static_cast<unsigned int>(
      std::max<int64_t>(1, std::min<int64_t>(blocks, kMaxReduceBlocks)));
}

// One warp per row of logits[B, K], as the CPU's softmax_cross_entropy.
__global__ void softmax_cross_entropy_kernel(ReduceScratch scratch, float* dlogits,
                                             const float* logits, const int32_t* labels,
                                             int64_t batch, int64_t classes, float smoothing) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const double s = smoothing;
  const float inv_b = 1.0f / static_cast<float>(batch);
  const float uniform_q = smoothing / static_cast<float>(classes);
  double acc = 0.0;  // lane 0's sum of its rows' losses
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
       r < batch; r += warps) {
    const float* z = logits + r * classes;
    float mx = -INFINITY;
    for (int64_t j = lane; j < classes; j += 32) mx = fmaxf(mx, z[j]);
    mx = warp_max(mx);
    double sum = 0.0, zsum = 0.0;
    for (int64_t j = lane; j < classes; j += 32) {
      sum += exp(static_cast<double>(z[j] - mx));
      zsum += z[j];
    }
    sum = __shfl_sync(0xffffffffu, warp_sum(sum), 0);
    zsum = warp_sum(zsum);
    const int32_t y = labels[r];
    if (lane == 0) {
      const double lse = mx + log(sum);
      acc += lse - (1.0 - s) * z[y] - s / static_cast<double>(classes) * zsum;
    }
    if (dlogits != nullptr) {
      float* d = dlogits + r * classes;
      const float inv_sum = static_cast<float>(1.0 / sum);
      for (int64_t j = lane; j < classes; j += 32) {
        const float q = uniform_q + (j == y ? 1.0f - smoothing : 0.0f);
        d[j] = (expf(z[j] - mx) * inv_sum - q) * inv_b;
      }
    }
  }
  finish_reduction(block_sum(acc), scratch);
}

__global__ void squared_error_kernel(ReduceScratch scratch, float* dpred, const float* pred,
                                     const float* target, int64_t n, float scale2) {
  double acc = 0.0;
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const float e = pred[i] - target[i];
    acc += static_cast<double>(e) * e;
    if (dpred != nullptr) dpred[i] = scale2 * e;
  }
  finish_reduction(block_sum(acc), scratch);
}

__global__ void sum_squares_kernel(ReduceScratch scratch, const float* x, int64_t n) {
  double acc = 0.0;
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    acc += static_cast<double>(x[i]) * x[i];
  }
  finish_reduction(block_sum(acc), scratch);
}

}  // namespace

cudaError_t launch_softmax_cross_entropy(ReduceScratch scratch, float* dlogits, const float* logits,
                                         const int32_t* labels, int64_t batch, int64_t classes,
                                         float label_smoothing, cudaStream_t s) {
  softmax_cross_entropy_kernel<<<reduce_grid(batch, kWarpsPerBlock), kThreads, 0, s>>>(
      scratch, dlogits, logits, labels, batch, classes, label_smoothing);
  return cudaGetLastError();
}

cudaError_t launch_squared_error(ReduceScratch scratch, float* dpred, const float* pred,
                                 const float* target, int64_t n, cudaStream_t s) {
  const float scale2 = 2.0f / static_cast<float>(n);
  squared_error_kernel<<<reduce_grid(n, kThreads), kThreads, 0, s>>>(scratch, dpred, pred, target,
                                                                     n, scale2);
  return cudaGetLastError();
}

cudaError_t launch_sum_squares(ReduceScratch scratch, const float* x, int64_t n, cudaStream_t s) {
  sum_squares_kernel<<<reduce_grid(n, kThreads), kThreads, 0, s>>>(scratch, x, n);
  return cudaGetLastError();
}

}  // namespace tuner::training::cuda
