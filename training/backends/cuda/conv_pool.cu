// Convolution helpers (im2col, gather-style col2im, dz + per-plane sums, the sum over samples of
// per-sample weight gradients) and the pooling kernels of the CUDA backend. The backward passes
// gather (each input pixel sums what its windows contribute, in the CPU's order) instead of
// scattering with atomics, so they are deterministic and, for pooling, bit-identical to the CPU.
#include "training/backends/cuda/device_math.cuh"
#include "training/backends/cuda/kernels.h"

namespace tuner::training::cuda {
namespace {

// Threads per block of the per-plane reductions.
constexpr int kPlaneThreads = 128;
// Warps per block of the one-warp-per-plane kernels.
constexpr int kWarpsPerBlock = kThreads / 32;

__global__ void im2col_kernel(float* col, const float* x, int64_t channels, int64_t h, int64_t w,
                              int64_t oh, int64_t ow, Window win, int64_t n) {
  const int64_t s = oh * ow, kk = win.kernel_h * win.kernel_w, ckk = channels * kk;
  for (int64_t idx = global_index(); idx < n; idx += global_stride()) {
    const int64_t pos = idx % s;
    const int64_t r = (idx / s) % ckk;
    const int64_t b = idx / (s * ckk);
    const int64_t c = r / kk, kh = (r % kk) / win.kernel_w, kw = r % win.kernel_w;
    const int64_t ih = (pos / ow) * win.stride - win.padding + kh;
    const int64_t iw = (pos % ow) * win.stride - win.padding + kw;
    col[idx] =
        (ih >= 0 && ih < h && iw >= 0 && iw < w) ? x[((b * channels + c) * h + ih) * w + iw] : 0.0f;
  }
}

__global__ void col2im_kernel(float* dx, const float* dcol, int64_t channels, int64_t h, int64_t w,
                              int64_t oh, int64_t ow, Window win, int64_t n) {
  const int64_t s = oh * ow, ckk = channels * win.kernel_h * win.kernel_w;
  for (int64_t idx = global_index(); idx < n; idx += global_stride()) {
    const int64_t iw = idx % w, ih = (idx / w) % h;
    const int64_t c = (idx / (h * w)) % channels, b = idx / (channels * h * w);
    const float* base = dcol + b * ckk * s;
    float acc = 0.0f;
    // (kh, kw) ascending: the order in which the CPU's col2im adds into this pixel.
    for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
      const int64_t t = ih + win.padding - kh;
      if (t < 0 || t % win.stride != 0 || t / win.stride >= oh) continue;
      const int64_t i = t / win.stride;
      for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
        const int64_t u = iw + win.padding - kw;
        if (u < 0 || u % win.stride != 0 || u / win.stride >= ow) continue;
        const int64_t row = (c * win.kernel_h + kh) * win.kernel_w + kw;
        acc += base[row * s + i * ow + u / win.stride];
      }
    }
    dx[idx] = acc;
  }
}

// One block per plane p = b * channels + o (grid-stride over planes).
__global__ void dz_plane_sum_kernel(float* dz, float* sums, int64_t sums_stride, const float* y,
                                    const float* dy, int64_t planes, int64_t channels,
                                    int64_t spatial, int act) {
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const int64_t base = p * spatial;
    float acc = 0.0f;
    for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x) {
      float g = dy[base + i];
      if (act != kActNone) {
        g = grad_from_output(act, y[base + i], g);
        dz[base + i] = g;
      }
      acc += g;
    }
    if (sums != nullptr) {
      acc = block_sum(acc);
      if (threadIdx.x == 0) sums[(p / channels) * sums_stride + p % channels] = acc;
    }
  }
}

__global__ void sum_over_batch_kernel(float* out, int64_t n, float* out2, int64_t n2,
                                      const float* part, int64_t batch, int64_t stride) {
  for (int64_t j = global_index(); j < n + n2; j += global_stride()) {
    float acc = 0.0f;
    for (int64_t b = 0; b < batch; ++b) acc += part[b * stride + j];
    if (j < n)
      out[j] = acc;
    else
      out2[j - n] = acc;
  }
}

__global__ void max_pool_forward_kernel(float* y, int32_t* argmax, const float* x, int64_t h,
                                        int64_t w, int64_t oh, int64_t ow, Window win, int64_t n) {
  for (int64_t idx = global_index(); idx < n; idx += global_stride()) {
    const int64_t j = idx % ow, i = (idx / ow) % oh, p = idx / (oh * ow);
    const float* in = x + p * h * w;
    float best = -INFINITY;
    int32_t best_at = -1;
    for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
      const int64_t ih = i * win.stride - win.padding + kh;
      if (ih < 0 || ih >= h) continue;
      for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
        const int64_t iw = j * win.stride - win.padding + kw;
        if (iw < 0 || iw >= w) continue;
        const float v = in[ih * w + iw];
        if (v > best || best_at < 0) {
          best = v;
          best_at = static_cast<int32_t>(ih * w + iw);
        }
      }
    }
    y[idx] = best;
    argmax[idx] = best_at;
  }
}

// Each input pixel sums the gradients of the outputs whose argmax it is, in ascending output
// order (kh and kw descending), as the CPU's scatter adds them.
__global__ void max_pool_backward_kernel(float* dx, const int32_t* argmax, const float* dy,
                                         int64_t h, int64_t w, int64_t oh, int64_t ow, Window win,
                                         int64_t n) {
  for (int64_t idx = global_index(); idx < n; idx += global_stride()) {
    const int64_t iw = idx % w, ih = (idx / w) % h, p = idx / (h * w);
    const int32_t self = static_cast<int32_t>(ih * w + iw);
    const int64_t out_base = p * oh * ow;
    float acc = 0.0f;
    for (int64_t kh = win.kernel_h - 1; kh >= 0; --kh) {
      const int64_t t = ih + win.padding - kh;
      if (t < 0 || t % win.stride != 0 || t / win.stride >= oh) continue;
      const int64_t i = t / win.stride;
      for (int64_t kw = win.kernel_w - 1; kw >= 0; --kw) {
        const int64_t u = iw + win.padding - kw;
        if (u < 0 || u % win.stride != 0 || u / win.stride >= ow) continue;
        const int64_t o = out_base + i * ow + u / win.stride;
        if (argmax[o] == self) acc += dy[o];
      }
    }
    dx[idx] = acc;
  }
}

__global__ void avg_pool_forward_kernel(float* y, const float* x, int64_t h, int64_t w, int64_t oh,
                                        int64_t ow, Window win, float inv, int64_t n) {
  for (int64_t idx = global_index(); idx < n; idx += global_stride()) {
    const int64_t j = idx % ow, i = (idx / ow) % oh, p = idx / (oh * ow);
    const float* in = x + p * h * w;
    float acc = 0.0f;
    for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
      const int64_t ih = i * win.stride - win.padding + kh;
      if (ih < 0 || ih >= h) continue;
      for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
        const int64_t iw = j * win.stride - win.padding + kw;
        if (iw >= 0 && iw < w) acc += in[ih * w + iw];
      }
    }
    y[idx] = acc * inv;
  }
}

__global__ void avg_pool_backward_kernel(float* dx, const float* dy, int64_t h, int64_t w,
                                         int64_t oh, int64_t ow, Window win, float inv, int64_t n) {
  for (int64_t idx = global_index(); idx < n; idx += global_stride()) {
    const int64_t iw = idx % w, ih = (idx / w) % h, p = idx / (h * w);
    const float* g = dy + p * oh * ow;
    float acc = 0.0f;
    for (int64_t kh = win.kernel_h - 1; kh >= 0; --kh) {
      const int64_t t = ih + win.padding - kh;
      if (t < 0 || t % win.stride != 0 || t / win.stride >= oh) continue;
      const int64_t i = t / win.stride;
      for (int64_t kw = win.kernel_w - 1; kw >= 0; --kw) {
        const int64_t u = iw + win.padding - kw;
        if (u < 0 || u % win.stride != 0 || u / win.stride >= ow) continue;
        acc += g[i * ow + u / win.stride] * inv;
      }
    }
    dx[idx] = acc;
  }
}

// One warp per plane.
__global__ void global_avg_pool_forward_kernel(float* y, const float* x, int64_t planes,
                                               int64_t spatial) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
       p < planes; p += warps) {
    float acc = 0.0f;
    for (int64_t i = lane; i < spatial; i += 32) acc += x[p * spatial + i];
    acc = warp_sum(acc);
    if (lane == 0) y[p] = acc / static_cast<float>(spatial);
  }
}

__global__ void global_avg_pool_backward_kernel(float* dx, const float* dy, int64_t spatial,
                                                int64_t n) {
  for (int64_t idx = global_index(); idx < n; idx += global_stride()) {
    dx[idx] = dy[idx / spatial] / static_cast<float>(spatial);
  }
}

unsigned int plane_grid(int64_t planes) {
  return static_cast<unsigned int>(std::max<int64_t>(1, std::min<int64_t>(planes, 65535)));
}

}  // namespace

cudaError_t launch_im2col(float* col, const float* x, int64_t batch, int64_t channels, int64_t h,
                          int64_t w, int64_t oh, int64_t ow, Window win, cudaStream_t s) {
  const int64_t n = batch * channels * win.kernel_h * win.kernel_w * oh * ow;
  if (n == 0) return cudaSuccess;
  im2col_kernel<<<grid_for(n), kThreads, 0, s>>>(col, x, channels, h, w, oh, ow, win, n);
  return cudaGetLastError();
}

cudaError_t launch_col2im(float* dx, const float* dcol, int64_t batch, int64_t channels, int64_t h,
                          int64_t w, int64_t oh, int64_t ow, Window win, cudaStream_t s) {
  const int64_t n = batch * channels * h * w;
  if (n == 0) return cudaSuccess;
  col2im_kernel<<<grid_for(n), kThreads, 0, s>>>(dx, dcol, channels, h, w, oh, ow, win, n);
  return cudaGetLastError();
}

cudaError_t launch_dz_plane_sum(float* dz, float* sums, int64_t sums_stride, const float* y,
                                const float* dy, int64_t batch, int64_t channels, int64_t spatial,
                                int act, cudaStream_t s) {
  const int64_t planes = batch * channels;
  if (planes == 0) return cudaSuccess;
  dz_plane_sum_kernel<<<plane_grid(planes), kPlaneThreads, 0, s>>>(dz, sums, sums_stride, y, dy,
                                                                   planes, channels, spatial, act);
  return cudaGetLastError();
}

cudaError_t launch_sum_over_batch(float* out, int64_t n, float* out2, int64_t n2, const float* part,
                                  int64_t batch, int64_t stride, cudaStream_t s) {
  if (n + n2 == 0) return cudaSuccess;
  sum_over_batch_kernel<<<grid_for(n + n2), kThreads, 0, s>>>(out, n, out2, n2, part, batch,
                                                              stride);
  return cudaGetLastError();
}

cudaError_t launch_max_pool_forward(float* y, int32_t* argmax, const float* x, int64_t planes,
                                    int64_t h, int64_t w, int64_t oh, int64_t ow, Window win,
                                    cudaStream_t s) {
  const int64_t n = planes * oh * ow;
  if (n == 0) return cudaSuccess;
  max_pool_forward_kernel<<<grid_for(n), kThreads, 0, s>>>(y, argmax, x, h, w, oh, ow, win, n);
  return cudaGetLastError();
}

cudaError_t launch_max_pool_backward(float* dx, const int32_t* argmax, const float* dy,
                                     int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                                     Window win, cudaStream_t s) {
  const int64_t n = planes * h * w;
  if (n == 0) return cudaSuccess;
  max_pool_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(dx, argmax, dy, h, w, oh, ow, win, n);
  return cudaGetLastError();
}

cudaError_t launch_avg_pool_forward(float* y, const float* x, int64_t planes, int64_t h, int64_t w,
                                    int64_t oh, int64_t ow, Window win, cudaStream_t s) {
  const int64_t n = planes * oh * ow;
  if (n == 0) return cudaSuccess;
  const float inv = 1.0f / static_cast<float>(win.kernel_h * win.kernel_w);
  avg_pool_forward_kernel<<<grid_for(n), kThreads, 0, s>>>(y, x, h, w, oh, ow, win, inv, n);
  return cudaGetLastError();
}

cudaError_t launch_avg_pool_backward(float* dx, const float* dy, int64_t planes, int64_t h,
                                     int64_t w, int64_t oh, int64_t ow, Window win,
                                     cudaStream_t s) {
  const int64_t n = planes * h * w;
  if (n == 0) return cudaSuccess;
  const float inv = 1.0f / static_cast<float>(win.kernel_h * win.kernel_w);
  avg_pool_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(dx, dy, h, w, oh, ow, win, inv, n);
  return cudaGetLastError();
}

cudaError_t launch_global_avg_pool_forward(float* y, const float* x, int64_t planes,
                                           int64_t spatial, cudaStream_t s) {
  if (planes == 0) return cudaSuccess;
  const int64_t blocks = (planes + kWarpsPerBlock - 1) / kWarpsPerBlock;
  global_avg_pool_forward_kernel<<<static_cast<unsigned int>(std::min(blocks, kMaxBlocks)),
                                   kThreads, 0, s>>>(y, x, planes, spatial);
  return cudaGetLastError();
}

cudaError_t launch_global_avg_pool_backward(float* dx, const float* dy, int64_t planes,
                                            int64_t spatial, cudaStream_t s) {
  const int64_t n = planes * spatial;
  if (n == 0) return cudaSuccess;
  global_avg_pool_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(dx, dy, spatial, n);
  return cudaGetLastError();
}

}  // namespace tuner::training::cuda
