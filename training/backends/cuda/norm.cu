// Batch norm and layer norm kernels of the CUDA backend. Statistics are summed in double as on the
// CPU (backends/cpu/cpu_pool_norm.cc), by fixed block trees instead of a sequential loop, so they
// agree with the CPU to rounding and are bit-identical from run to run.
#include "training/backends/cuda/device_math.cuh"
#include "training/backends/cuda/kernels.h"

namespace tuner::training::cuda {
namespace {

constexpr int kNormThreads = 256;
// Column-reduction tile of the layer norm parameter gradients (as in dz_column_sum).
constexpr int kColTile = 32;
constexpr int kRowLanes = 16;

unsigned int channel_grid(int64_t channels) {
  return static_cast<unsigned int>(std::max<int64_t>(1, std::min<int64_t>(channels, 65535)));
}

// One block per channel c; element k of the channel (k in [0, B*S)) is x[(b*C + c)*S + i] with
// b = k / S, i = k % S.
__global__ void batch_norm_train_kernel(float* y, float* mean, float* rstd, float* running_mean,
                                        float* running_var, const float* x, const float* gamma,
                                        const float* beta, int64_t batch, int64_t channels,
                                        int64_t spatial, float eps, float momentum) {
  const int64_t n = batch * spatial;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double sum = 0.0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      sum += x[((k / spatial) * channels + c) * spatial + k % spatial];
    }
    const double mu = block_sum(sum) / static_cast<double>(n);
    double sq = 0.0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      const double d = x[((k / spatial) * channels + c) * spatial + k % spatial] - mu;
      sq += d * d;
    }
    sq = block_sum(sq);
    const double var = sq / static_cast<double>(n);
    const float r = static_cast<float>(1.0 / sqrt(var + eps));
    const float m = static_cast<float>(mu);
    if (threadIdx.x == 0) {
      mean[c] = m;
      rstd[c] = r;
      const double unbiased = n > 1 ? sq / static_cast<double>(n - 1) : var;
      running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * m;
      running_var[c] = (1.0f - momentum) * running_var[c] + momentum * static_cast<float>(unbiased);
    }
    const float g = gamma[c] * r, bb = beta[c];
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      const int64_t at = ((k / spatial) * channels + c) * spatial + k % spatial;
      y[at] = (x[at] - m) * g + bb;
    }
  }
}

__global__ void batch_norm_eval_kernel(float* y, const float* x, const float* gamma,
                                       const float* beta, const float* running_mean,
                                       const float* running_var, int64_t channels, int64_t spatial,
                                       float eps, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const int64_t c = (i / spatial) % channels;
    const float g = gamma[c] / sqrtf(running_var[c] + eps);
    y[i] = (x[i] - running_mean[c]) * g + beta[c];
  }
}

__global__ void batch_norm_backward_kernel(float* dx, float* dgamma, float* dbeta, const float* x,
                                           const float* gamma, const float* mean, const float* rstd,
                                           const float* dy, int64_t batch, int64_t channels,
                                           int64_t spatial) {
  const int64_t n = batch * spatial;
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    const float m = mean[c], r = rstd[c];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      const int64_t at = ((k / spatial) * channels + c) * spatial + k % spatial;
      const float g = dy[at];
      sum_dy += g;
      sum_dy_xhat += g * (x[at] - m) * r;
    }
    sum_dy = block_sum(sum_dy);
    sum_dy_xhat = block_sum(sum_dy_xhat);
    if (threadIdx.x == 0) {
      dbeta[c] = static_cast<float>(sum_dy);
      dgamma[c] = static_cast<float>(sum_dy_xhat);
    }
    if (dx == nullptr) continue;
    const float kg = gamma[c] * r;
    const float a = static_cast<float>(sum_dy) * inv_n;
    const float bq = static_cast<float>(sum_dy_xhat) * inv_n;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      const int64_t at = ((k / spatial) * channels + c) * spatial + k % spatial;
      const float xhat = (x[at] - m) * r;
      dx[at] = kg * (dy[at] - a - xhat * bq);
    }
  }
}

// One block per row.
__global__ void layer_norm_forward_kernel(float* y, float* mean, float* rstd, const float* x,
                                          const float* gamma, const float* beta, int64_t rows,
                                          int64_t d, float eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* in = x + r * d;
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) sum += in[i];
    const double mu = block_sum(sum) / static_cast<double>(d);
    double sq = 0.0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) sq += (in[i] - mu) * (in[i] - mu);
    sq = block_sum(sq);
    const float rs = static_cast<float>(1.0 / sqrt(sq / static_cast<double>(d) + eps));
    const float m = static_cast<float>(mu);
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
    float* out = y + r * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      out[i] = (in[i] - m) * rs * gamma[i] + beta[i];
    }
  }
}

// dx only: one block per row.
__global__ void layer_norm_backward_dx_kernel(float* dx, const float* x, const float* gamma,
                                              const float* mean, const float* rstd, const float* dy,
                                              int64_t rows, int64_t d) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float m = mean[r], rs = rstd[r];
    const float* in = x + r * d;
    const float* gr = dy + r * d;
    double sum_dxhat = 0.0, sum_dxhat_xhat = 0.0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const float dxhat = gr[i] * gamma[i];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * (in[i] - m) * rs;
    }
    sum_dxhat = block_sum(sum_dxhat);
    sum_dxhat_xhat = block_sum(sum_dxhat_xhat);
    const float a = static_cast<float>(sum_dxhat / static_cast<double>(d));
    const float bq = static_cast<float>(sum_dxhat_xhat / static_cast<double>(d));
    float* out = dx + r * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const float xhat = (in[i] - m) * rs;
      out[i] = rs * (gr[i] * gamma[i] - a - xhat * bq);
    }
  }
}

// dgamma[D], dbeta[D]: column sums over the rows, tiled as dz_column_sum_kernel.
__global__ void layer_norm_backward_params_kernel(float* dgamma, float* dbeta, const float* x,
                                                  const float* mean, const float* rstd,
                                                  const float* dy, int64_t rows, int64_t d) {
  __shared__ float part_g[kRowLanes][kColTile + 1];
  __shared__ float part_b[kRowLanes][kColTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kColTile + tx;
  float acc_g = 0.0f, acc_b = 0.0f;
  if (i < d) {
    for (int64_t r = ty; r < rows; r += kRowLanes) {
      const float gv = dy[r * d + i];
      acc_g += gv * (x[r * d + i] - mean[r]) * rstd[r];
      acc_b += gv;
    }
  }
  part_g[ty][tx] = acc_g;
  part_b[ty][tx] = acc_b;
  __syncthreads();
  if (ty == 0 && i < d) {
    float sg = 0.0f, sb = 0.0f;
    for (int k = 0; k < kRowLanes; ++k) {
      sg += part_g[k][tx];
      sb += part_b[k][tx];
    }
    dgamma[i] = sg;
    dbeta[i] = sb;
  }
}

}  // namespace

cudaError_t launch_batch_norm_train(float* y, float* mean, float* rstd, float* running_mean,
                                    float* running_var, const float* x, const float* gamma,
                                    const float* beta, int64_t batch, int64_t channels,
                                    int64_t spatial, float eps, float momentum, cudaStream_t s) {
  if (channels == 0) return cudaSuccess;
  batch_norm_train_kernel<<<channel_grid(channels), kNormThreads, 0, s>>>(
      y, mean, rstd, running_mean, running_var, x, gamma, beta, batch, channels, spatial, eps,
      momentum);
  return cudaGetLastError();
}

cudaError_t launch_batch_norm_eval(float* y, const float* x, const float* gamma, const float* beta,
                                   const float* running_mean, const float* running_var,
                                   int64_t batch, int64_t channels, int64_t spatial, float eps,
                                   cudaStream_t s) {
  const int64_t n = batch * channels * spatial;
  if (n == 0) return cudaSuccess;
  batch_norm_eval_kernel<<<grid_for(n), kThreads, 0, s>>>(y, x, gamma, beta, running_mean,
                                                          running_var, channels, spatial, eps, n);
  return cudaGetLastError();
}

cudaError_t launch_batch_norm_backward(float* dx, float* dgamma, float* dbeta, const float* x,
                                       const float* gamma, const float* mean, const float* rstd,
                                       const float* dy, int64_t batch, int64_t channels,
                                       int64_t spatial, cudaStream_t s) {
  if (channels == 0) return cudaSuccess;
  batch_norm_backward_kernel<<<channel_grid(channels), kNormThreads, 0, s>>>(
      dx, dgamma, dbeta, x, gamma, mean, rstd, dy, batch, channels, spatial);
  return cudaGetLastError();
}

cudaError_t launch_layer_norm_forward(float* y, float* mean, float* rstd, const float* x,
                                      const float* gamma, const float* beta, int64_t rows,
                                      int64_t d, float eps, cudaStream_t s) {
  if (rows == 0) return cudaSuccess;
  layer_norm_forward_kernel<<<channel_grid(rows), kNormThreads, 0, s>>>(y, mean, rstd, x, gamma,
                                                                        beta, rows, d, eps);
  return cudaGetLastError();
}

cudaError_t launch_layer_norm_backward(float* dx, float* dgamma, float* dbeta, const float* x,
                                       const float* gamma, const float* mean, const float* rstd,
                                       const float* dy, int64_t rows, int64_t d, cudaStream_t s) {
  if (d == 0) return cudaSuccess;
  if (dx != nullptr && rows > 0) {
    layer_norm_backward_dx_kernel<<<channel_grid(rows), kNormThreads, 0, s>>>(dx, x, gamma, mean,
                                                                              rstd, dy, rows, d);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  const dim3 block(kColTile, kRowLanes);
  const dim3 grid(static_cast<unsigned int>((d + kColTile - 1) / kColTile));
  layer_norm_backward_params_kernel<<<grid, block, 0, s>>>(dgamma, dbeta, x, mean, rstd, dy, rows,
                                                           d);
  return cudaGetLastError();
}

}  // namespace tuner::training::cuda
