// Element-wise kernels of the CUDA backend: fused bias + activation epilogues, activations,
// dropout, arithmetic, the linear layer's dz + column sum, and the optimizer steps. Each mirrors
// its CPU twin in backends/cpu/ expression for expression.
#include "training/backends/cuda/device_math.cuh"
#include "training/backends/cuda/kernels.h"

namespace tuner::training::cuda {
namespace {

// bias index of element i: (i / bias_div) % bias_mod.
__global__ void bias_activation_kernel(float* y, const float* bias, int64_t n, int64_t bias_div,
                                       int64_t bias_mod, int act) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    float v = y[i];
    if (bias != nullptr) v += bias[(i / bias_div) % bias_mod];
    y[i] = activate(act, v);
  }
}

__global__ void activation_forward_kernel(float* y, const float* x, int64_t n, int act) {
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = activate(act, x[i]);
}

__global__ void activation_backward_kernel(float* dx, const float* x, const float* y,
                                           const float* dy, int64_t n, int act) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    dx[i] = act == kActGelu ? dy[i] * gelu_grad(x[i]) : grad_from_output(act, y[i], dy[i]);
  }
}

__global__ void dropout_kernel(float* y, float* mask, const float* x, int64_t n, uint64_t key,
                               uint64_t threshold, float keep_scale) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const uint64_t u = mix64(key ^ static_cast<uint64_t>(i)) >> 40;
    const float m = u >= threshold ? keep_scale : 0.0f;
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

__global__ void mul_kernel(float* y, const float* a, const float* b, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = a[i] * b[i];
}

__global__ void add_kernel(float* y, const float* a, const float* b, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = a[i] + b[i];
}

__global__ void scale_kernel(float* x, float factor, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) x[i] *= factor;
}

// Block (kColTile, kRowLanes): thread (tx, ty) walks rows ty, ty + kRowLanes, ... of column
// blockIdx.x * kColTile + tx; the kRowLanes partials are then summed in ty order.
constexpr int kColTile = 32;
constexpr int kRowLanes = 16;

__global__ void dz_column_sum_kernel(float* dz, float* db, const float* y, const float* dy,
                                     int64_t rows, int64_t cols, int act) {
  __shared__ float partial[kRowLanes][kColTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColTile + tx;
  float acc = 0.0f;
  if (col < cols) {
    for (int64_t r = ty; r < rows; r += kRowLanes) {
      const int64_t i = r * cols + col;
      float g = dy[i];
      if (act != kActNone) {
        g = grad_from_output(act, y[i], g);
        dz[i] = g;
      }
      acc += g;
    }
  }
  if (db == nullptr) return;  // uniform over the block: no thread reaches the barrier
  partial[ty][tx] = acc;
  __syncthreads();
  if (ty == 0 && col < cols) {
    float sum = 0.0f;
    for (int k = 0; k < kRowLanes; ++k) sum += partial[k][tx];
    db[col] = sum;
  }
}

__global__ void sgd_kernel(float* params, const float* grads, float* velocity, int64_t n, float lr,
                           float momentum, float dampening, float weight_decay, bool nesterov,
                           bool first_step) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    float g = grads[i] + weight_decay * params[i];
    if (momentum != 0.0f) {
      const float buf = first_step ? g : momentum * velocity[i] + (1.0f - dampening) * g;
      velocity[i] = buf;
      g = nesterov ? g + momentum * buf : buf;
    }
    params[i] -= lr * g;
  }
}

__global__ void adam_kernel(float* params, const float* grads, float* m, float* v, int64_t n,
                            float beta1, float beta2, float eps, float step_size,
                            float inv_sqrt_bc2, float decay, float l2) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const float p0 = params[i];
    const float p = p0 * decay;
    const float g = grads[i] + l2 * p0;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float denom = sqrtf(vi) * inv_sqrt_bc2 + eps;
    params[i] = p - step_size * mi / denom;
  }
}

}  // namespace

cudaError_t launch_bias_activation_rows(float* y, const float* bias, int64_t rows, int64_t cols,
                                        int act, cudaStream_t s) {
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  bias_activation_kernel<<<grid_for(n), kThreads, 0, s>>>(y, bias, n, 1, cols, act);
  return cudaGetLastError();
}

cudaError_t launch_bias_activation_planes(float* y, const float* bias, int64_t batch,
                                          int64_t channels, int64_t spatial, int act,
                                          cudaStream_t s) {
  const int64_t n = batch * channels * spatial;
  if (n == 0) return cudaSuccess;
  bias_activation_kernel<<<grid_for(n), kThreads, 0, s>>>(y, bias, n, spatial, channels, act);
  return cudaGetLastError();
}

cudaError_t launch_activation_forward(float* y, const float* x, int64_t n, int act,
                                      cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  activation_forward_kernel<<<grid_for(n), kThreads, 0, s>>>(y, x, n, act);
  return cudaGetLastError();
}

cudaError_t launch_activation_backward(float* dx, const float* x, const float* y, const float* dy,
                                       int64_t n, int act, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  activation_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(dx, x, y, dy, n, act);
  return cudaGetLastError();
}

cudaError_t launch_dropout(float* y, float* mask, const float* x, int64_t n, uint64_t key,
                           uint64_t threshold, float keep_scale, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  dropout_kernel<<<grid_for(n), kThreads, 0, s>>>(y, mask, x, n, key, threshold, keep_scale);
  return cudaGetLastError();
}

cudaError_t launch_mul(float* y, const float* a, const float* b, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  mul_kernel<<<grid_for(n), kThreads, 0, s>>>(y, a, b, n);
  return cudaGetLastError();
}

cudaError_t launch_add(float* y, const float* a, const float* b, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  add_kernel<<<grid_for(n), kThreads, 0, s>>>(y, a, b, n);
  return cudaGetLastError();
}

cudaError_t launch_scale(float* x, float factor, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  scale_kernel<<<grid_for(n), kThreads, 0, s>>>(x, factor, n);
  return cudaGetLastError();
}

cudaError_t launch_dz_column_sum(float* dz, float* db, const float* y, const float* dy,
                                 int64_t rows, int64_t cols, int act, cudaStream_t s) {
  if (cols == 0) return cudaSuccess;
  const dim3 block(kColTile, kRowLanes);
  const dim3 grid(static_cast<unsigned int>((cols + kColTile - 1) / kColTile));
  dz_column_sum_kernel<<<grid, block, 0, s>>>(dz, db, y, dy, rows, cols, act);
  return cudaGetLastError();
}

cudaError_t launch_sgd(float* params, const float* grads, float* velocity, int64_t n, float lr,
                       float momentum, float dampening, float weight_decay, bool nesterov,
                       bool first_step, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  sgd_kernel<<<grid_for(n), kThreads, 0, s>>>(params, grads, velocity, n, lr, momentum, dampening,
                                              weight_decay, nesterov, first_step);
  return cudaGetLastError();
}

cudaError_t launch_adam(float* params, const float* grads, float* m, float* v, int64_t n,
                        float beta1, float beta2, float eps, float step_size, float inv_sqrt_bc2,
                        float decay, float l2, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  adam_kernel<<<grid_for(n), kThreads, 0, s>>>(params, grads, m, v, n, beta1, beta2, eps, step_size,
                                               inv_sqrt_bc2, decay, l2);
  return cudaGetLastError();
}

}  // namespace tuner::training::cuda
