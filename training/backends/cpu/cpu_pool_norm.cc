// The CPU backend's pooling and layer-norm kernels (batch norm: cpu_batch_norm.cc).
#include <algorithm>
#include <cmath>
#include <limits>

#include "training/backends/cpu/activation_math.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cpu/max_pool_2x2.h"
#include "training/backends/cpu/planes.h"

namespace tuner::training {
namespace {

// Average pooling whose k x k windows tile the plane (stride k, no padding), the common case: the
// general loops' sums in the same order (row by row, left to right, from 0), without their bounds
// checks. kK > 0 fixes k at compile time (the loops unroll); kK == 0 takes it from `k`.
template <int kK>
void avg_pool_tiled_forward(const float* in, int64_t w, int64_t oh, int64_t ow, int64_t k,
                            float inv, float* out) {
  if constexpr (kK > 0) k = kK;
  for (int64_t i = 0; i < oh; ++i) {
    const float* rows = in + i * k * w;
    for (int64_t j = 0; j < ow; ++j) {
      const float* window = rows + j * k;
      float acc = 0.0f;
      for (int64_t kh = 0; kh < k; ++kh) {
        for (int64_t kw = 0; kw < k; ++kw) acc += window[kh * w + kw];
      }
      out[i * ow + j] = acc * inv;
    }
  }
}

// Its backward: each input in a window gets 0 + dy * inv (as the general loop's zeroed plane plus
// one contribution), the rows and columns past the last window 0.
template <int kK>
void avg_pool_tiled_backward(const float* g, int64_t h, int64_t w, int64_t oh, int64_t ow,
                             int64_t k, float inv, float* plane) {
  if constexpr (kK > 0) k = kK;
  for (int64_t ih = 0; ih < h; ++ih) {
    float* row = plane + ih * w;
    const int64_t i = ih / k;
    if (i >= oh) {
      std::fill(row, row + w, 0.0f);
      continue;
    }
    const float* gi = g + i * ow;
    for (int64_t j = 0; j < ow; ++j) {
      const float v = 0.0f + gi[j] * inv;
      for (int64_t kw = 0; kw < k; ++kw) row[j * k + kw] = v;
    }
    std::fill(row + ow * k, row + w, 0.0f);
  }
}

bool windows_tile(const Window2d& win) {
  return win.kernel_h == win.kernel_w && win.stride == win.kernel_h && win.padding == 0;
}

}  // namespace

void CpuBackend::max_pool2d_forward(const Window2d& win, const Tensor& x, Tensor& y,
                                    std::span<int32_t> argmax) {
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t oh = y.dim(2), ow = y.dim(3);
  const float* xp = x.data();
  float* yp = y.data();
  const bool two_by_two =
      win.kernel_h == 2 && win.kernel_w == 2 && win.stride == 2 && win.padding == 0;
  pool_.parallel_for(planes, kMinPlanesPerThread, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* in = xp + p * h * w;
      float* out = yp + p * oh * ow;
      int32_t* arg = argmax.data() + p * oh * ow;
      if (two_by_two) {
        cpu::max_pool_2x2_plane(in, w, oh, ow, out, arg);
        continue;
      }
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          float best = -std::numeric_limits<float>::infinity();
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
          out[i * ow + j] = best;
          arg[i * ow + j] = best_at;
        }
      }
    }
  });
}

void CpuBackend::max_pool2d_backward(const Window2d& win, std::span<const int32_t> argmax,
                                     const Tensor& dy, Tensor& dx) {
  const int64_t planes = dx.dim(0) * dx.dim(1), hw = dx.dim(2) * dx.dim(3);
  const int64_t ohw = dy.dim(2) * dy.dim(3);
  const float* g = dy.data();
  float* out = dx.data();
  // 2x2 windows with stride 2 tile an even plane exactly: each input is written once, with its
  // gradient or zero, instead of zeroing the plane and scattering into it.
  const bool tiled = win.kernel_h == 2 && win.kernel_w == 2 && win.stride == 2 &&
                     win.padding == 0 && dx.dim(2) % 2 == 0 && dx.dim(3) % 2 == 0;
  const int64_t oh = dy.dim(2), ow = dy.dim(3);
  pool_.parallel_for(planes, kMinPlanesPerThread, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* plane = out + p * hw;
      if (tiled) {
        cpu::max_pool_2x2_backward_plane(argmax.data() + p * ohw, g + p * ohw, oh, ow, plane);
        continue;
      }
      std::fill(plane, plane + hw, 0.0f);
      for (int64_t i = 0; i < ohw; ++i) {
        const int32_t at = argmax[p * ohw + i];
        if (at >= 0) plane[at] += g[p * ohw + i];
      }
    }
  });
}

void CpuBackend::avg_pool2d_forward(const Window2d& win, const Tensor& x, Tensor& y) {
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t oh = y.dim(2), ow = y.dim(3);
  const float inv = 1.0f / static_cast<float>(win.kernel_h * win.kernel_w);
  const float* xp = x.data();
  float* yp = y.data();
  const bool tiled = windows_tile(win);
  pool_.parallel_for(planes, kMinPlanesPerThread, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* in = xp + p * h * w;
      float* out = yp + p * oh * ow;
      if (tiled) {
        if (win.kernel_h == 2) {
          avg_pool_tiled_forward<2>(in, w, oh, ow, 2, inv, out);
        } else {
          avg_pool_tiled_forward<0>(in, w, oh, ow, win.kernel_h, inv, out);
        }
        continue;
      }
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          float acc = 0.0f;
          for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
            const int64_t ih = i * win.stride - win.padding + kh;
            if (ih < 0 || ih >= h) continue;
            for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
              const int64_t iw = j * win.stride - win.padding + kw;
              if (iw >= 0 && iw < w) acc += in[ih * w + iw];
            }
          }
          out[i * ow + j] = acc * inv;
        }
      }
    }
  });
}

void CpuBackend::avg_pool2d_backward(const Window2d& win, const Tensor& dy, Tensor& dx) {
  const int64_t planes = dx.dim(0) * dx.dim(1), h = dx.dim(2), w = dx.dim(3);
  const int64_t oh = dy.dim(2), ow = dy.dim(3);
  const float inv = 1.0f / static_cast<float>(win.kernel_h * win.kernel_w);
  const float* g = dy.data();
  float* dxp = dx.data();
  const bool tiled = windows_tile(win);
  pool_.parallel_for(planes, kMinPlanesPerThread, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* plane = dxp + p * h * w;
      const float* gp = g + p * oh * ow;
      if (tiled) {
        if (win.kernel_h == 2) {
          avg_pool_tiled_backward<2>(gp, h, w, oh, ow, 2, inv, plane);
        } else {
          avg_pool_tiled_backward<0>(gp, h, w, oh, ow, win.kernel_h, inv, plane);
        }
        continue;
      }
      std::fill(plane, plane + h * w, 0.0f);
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          const float v = gp[i * ow + j] * inv;
          for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
            const int64_t ih = i * win.stride - win.padding + kh;
            if (ih < 0 || ih >= h) continue;
            for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
              const int64_t iw = j * win.stride - win.padding + kw;
              if (iw >= 0 && iw < w) plane[ih * w + iw] += v;
            }
          }
        }
      }
    }
  });
}

void CpuBackend::global_avg_pool_forward(const Tensor& x, Tensor& y) {
  const int64_t planes = x.dim(0) * x.dim(1), s = spatial(x);
  const float* xp = x.data();
  float* yp = y.data();
  pool_.parallel_for(planes, kMinPlanesPerThread, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float acc = 0.0f;
      for (int64_t i = 0; i < s; ++i) acc += xp[p * s + i];
      yp[p] = acc / static_cast<float>(s);
    }
  });
}

void CpuBackend::global_avg_pool_backward(const Tensor& dy, Tensor& dx) {
  const int64_t planes = dx.dim(0) * dx.dim(1), s = spatial(dx);
  const float* g = dy.data();
  float* out = dx.data();
  pool_.parallel_for(planes, kMinPlanesPerThread, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float v = g[p] / static_cast<float>(s);
      std::fill(out + p * s, out + (p + 1) * s, v);
    }
  });
}

void CpuBackend::layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    float eps, Tensor& mean, Tensor& rstd, Tensor& y) {
  const int64_t rows = x.dim(0), d = x.numel() / std::max<int64_t>(rows, 1);
  const float* xp = x.data();
  const float* gp = gamma.data();
  const float* bp = beta.data();
  float* yp = y.data();
  pool_.parallel_for(rows, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* in = xp + r * d;
      const double mu = cpu::sum_fixed_order_double(d, [in](int64_t i) { return double{in[i]}; }) /
                        static_cast<double>(d);
      const double sq = cpu::sum_fixed_order_double(d, [in, mu](int64_t i) {
        const double v = in[i] - mu;
        return v * v;
      });
      const float rs = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(d) + eps));
      const float m = static_cast<float>(mu);
      mean.data()[r] = m;
      rstd.data()[r] = rs;
      float* out = yp + r * d;
      for (int64_t i = 0; i < d; ++i) out[i] = (in[i] - m) * rs * gp[i] + bp[i];
    }
  });
}

void CpuBackend::layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                     const Tensor& rstd, const Tensor& dy, Tensor* dx,
                                     Tensor& dgamma, Tensor& dbeta) {
  const int64_t rows = x.dim(0), d = x.numel() / std::max<int64_t>(rows, 1);
  const float* xp = x.data();
  const float* gp = gamma.data();
  const float* g = dy.data();
  if (dx != nullptr) {
    float* dxp = dx->data();
    pool_.parallel_for(rows, 8, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float m = mean.data()[r], rs = rstd.data()[r];
        const float* in = xp + r * d;
        const float* gr = g + r * d;
        const cpu::TwoSums sums =
            cpu::two_sums_fixed_order_double(d, [=](int64_t i, double& dxhat, double& dxhat_xhat) {
              const float v = gr[i] * gp[i];
              dxhat += v;
              dxhat_xhat += v * (in[i] - m) * rs;
            });
        const float a = static_cast<float>(sums.first / static_cast<double>(d));
        const float bq = static_cast<float>(sums.second / static_cast<double>(d));
        float* out = dxp + r * d;
        for (int64_t i = 0; i < d; ++i) {
          const float xhat = (in[i] - m) * rs;
          out[i] = rs * (gr[i] * gp[i] - a - xhat * bq);
        }
      }
    });
  }
  // Parameter gradients: each thread owns a range of features and sums over all rows in order.
  pool_.parallel_for(d, 16, [&](int64_t i0, int64_t i1) {
    float* dgp = dgamma.data();
    float* dbp = dbeta.data();
    for (int64_t i = i0; i < i1; ++i) dgp[i] = dbp[i] = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float m = mean.data()[r], rs = rstd.data()[r];
      for (int64_t i = i0; i < i1; ++i) {
        const float gv = g[r * d + i];
        dgp[i] += gv * (xp[r * d + i] - m) * rs;
        dbp[i] += gv;
      }
    }
  });
}

}  // namespace tuner::training
