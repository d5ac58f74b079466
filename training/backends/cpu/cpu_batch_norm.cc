// The CPU backend's batch norm over x[B,C,S] (S = H * W, 1 for [B,C]): training forward, eval
// forward and backward, side by side (docs/training.md, "Batch norm on the CPU").
//
// Each kernel is written once over a vector type (Simd below: 16 lanes with AVX-512, 8 with
// AVX2, 1 otherwise, chosen at compile time as -march=native allows) and threads over channels
// (training forward, backward) or planes (eval). A channel's B planes are read twice, once for
// the statistics and once for the output, while they are still in the core's L2 cache.
//
// Statistics. The sums of a channel run in double, in a fixed order (one accumulator per lane,
// the lanes added in a fixed tree), so the same input and thread count give the same bits; the
// values are shifted by the channel's first element before they are summed, so that an input
// whose mean is far from 0 against its spread loses nothing to E[x^2] - E[x]^2 (each shifted
// value is exact in float to its last bit, and its square exact in double).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cpu/max_pool_2x2.h"
#include "training/backends/cpu/planes.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace tuner::training {
namespace {

// ---- The vector type: F holds kLanes floats, Acc kLanes double accumulators ----
#if defined(__AVX512F__)
struct Simd {
  static constexpr int kLanes = 16;
  using F = __m512;
  struct Acc {
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  };
  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  // The first n lanes (1 <= n < kLanes) from p, the others 0.
  static F load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static void store_n(float* p, F v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static F keep_n(F v, int n) { return _mm512_maskz_mov_ps(mask(n), v); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }  // a * b + c
  static F relu(F v) { return _mm512_max_ps(v, _mm512_setzero_ps()); }
  // y > 0 ? g : 0
  static F where_positive(F y, F g) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ), g);
  }
  static __m512d lo(F v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
  static __m512d hi(F v) {
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  }
  static void add(Acc& a, F v) {
    a.lo = _mm512_add_pd(a.lo, lo(v));
    a.hi = _mm512_add_pd(a.hi, hi(v));
  }
  static void add_product(Acc& a, F u, F v) {  // a += u * v, the product in double
    a.lo = _mm512_fmadd_pd(lo(u), lo(v), a.lo);
    a.hi = _mm512_fmadd_pd(hi(u), hi(v), a.hi);
  }
  static double total(const Acc& a) {
    alignas(64) double l[16];
    _mm512_store_pd(l, a.lo);
    _mm512_store_pd(l + 8, a.hi);
    return tree_sum(l);
  }
  static double tree_sum(const double* l) {
    double t[8];
    for (int i = 0; i < 8; ++i) t[i] = l[i] + l[i + 8];
    return ((t[0] + t[4]) + (t[1] + t[5])) + ((t[2] + t[6]) + (t[3] + t[7]));
  }
};
#elif defined(__AVX2__)
struct Simd {
  static constexpr int kLanes = 8;
  using F = __m256;
  struct Acc {
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  };
  static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static F load_n(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  // Masked stores (vmaskmovps) are slow on AMD's cores: a partial vector goes through the stack.
  static void store_n(float* p, F v, int n) {
    alignas(32) float l[8];
    _mm256_store_ps(l, v);
    std::memcpy(p, l, static_cast<size_t>(n) * sizeof(float));
  }
  static F keep_n(F v, int n) { return _mm256_and_ps(v, _mm256_castsi256_ps(mask(n))); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
#if defined(__FMA__)
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
#else
  static F fmadd(F a, F b, F c) { return _mm256_add_ps(_mm256_mul_ps(a, b), c); }
#endif
  static F relu(F v) { return _mm256_max_ps(v, _mm256_setzero_ps()); }
  static F where_positive(F y, F g) {
    return _mm256_and_ps(_mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_GT_OQ), g);
  }
  static __m256d lo(F v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
  static __m256d hi(F v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
  static void add(Acc& a, F v) {
    a.lo = _mm256_add_pd(a.lo, lo(v));
    a.hi = _mm256_add_pd(a.hi, hi(v));
  }
  static void add_product(Acc& a, F u, F v) {
    a.lo = _mm256_add_pd(a.lo, _mm256_mul_pd(lo(u), lo(v)));
    a.hi = _mm256_add_pd(a.hi, _mm256_mul_pd(hi(u), hi(v)));
  }
  static double total(const Acc& a) {
    alignas(32) double l[8];
    _mm256_store_pd(l, a.lo);
    _mm256_store_pd(l + 4, a.hi);
    return ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
  }
};
#else
struct Simd {
  static constexpr int kLanes = 1;
  using F = float;
  struct Acc {
    double v = 0.0;
  };
  static F set1(float v) { return v; }
  static F load(const float* p) { return *p; }
  static F load_n(const float* p, int) { return *p; }
  static void store(float* p, F v) { *p = v; }
  static void store_n(float* p, F v, int) { *p = v; }
  static F keep_n(F v, int) { return v; }
  static F sub(F a, F b) { return a - b; }
  static F mul(F a, F b) { return a * b; }
  static F fmadd(F a, F b, F c) { return a * b + c; }
  static F relu(F v) { return v > 0.0f ? v : 0.0f; }
  static F where_positive(F y, F g) { return y > 0.0f ? g : 0.0f; }
  static void add(Acc& a, F v) { a.v += v; }
  static void add_product(Acc& a, F u, F v) { a.v += double{u} * double{v}; }
  static double total(const Acc& a) { return a.v; }
};
#endif

using F = Simd::F;
constexpr int kLanes = Simd::kLanes;

// Calls f(i, n) for the vectors of a plane of s values: i = 0, kLanes, ..., n = kLanes but for a
// last partial one (1 <= n < kLanes).
template <class Fn>
inline void for_each_vector(int64_t s, Fn f) {
  int64_t i = 0;
  for (; i + kLanes <= s; i += kLanes) f(i, kLanes);
  if (i < s) f(i, static_cast<int>(s - i));
}

// The same, for sums: f(i, n, half) with half (a std::integral_constant, 0 or 1) alternating
// from one vector to the next, so that a kernel keeps two sets of accumulators and each add
// waits on the one two vectors back (the adder's latency, not its throughput, bounded a single
// set). A plane always starts at half 0: the order of the sums depends on S alone.
template <class Fn>
inline void for_each_vector_alternating(int64_t s, Fn f) {
  constexpr std::integral_constant<int, 0> first;
  constexpr std::integral_constant<int, 1> second;
  int64_t i = 0;
  for (; i + 2 * kLanes <= s; i += 2 * kLanes) {
    f(i, kLanes, first);
    f(i + kLanes, kLanes, second);
  }
  if (i + kLanes <= s) {
    f(i, kLanes, first);
    i += kLanes;
    if (i < s) f(i, static_cast<int>(s - i), second);
  } else if (i < s) {
    f(i, static_cast<int>(s - i), first);
  }
}

// The total of two sets of accumulators.
inline double total(const Simd::Acc (&acc)[2]) { return Simd::total(acc[0]) + Simd::total(acc[1]); }

// dx's per-channel coefficients: dx = k dy + (x - mean) slope + offset.
struct DxCoefficients {
  F k, slope, offset;
};

// One channel's gradients from pass 1's sums (of dy and of dy (x - mean)) over its n values: dbeta
// and dgamma written, dx = k (dy - mean(dy) - xhat mean(dy xhat)) with xhat = (x - mean) r and
// k = gamma r returned as k dy + (x - mean) (-k r mean(dy xhat)) - k mean(dy).
DxCoefficients channel_grads(const Simd::Acc (&sum_dy)[2], const Simd::Acc (&sum_dy_xm)[2],
                             float gamma, float r, float inv_n, float& dgamma, float& dbeta) {
  const double total_dy = total(sum_dy);
  const double total_dy_xhat = total(sum_dy_xm) * r;
  dbeta = static_cast<float>(total_dy);
  dgamma = static_cast<float>(total_dy_xhat);
  const float k = gamma * r;
  const float a = static_cast<float>(total_dy) * inv_n;
  const float bq = static_cast<float>(total_dy_xhat) * inv_n;
  return {Simd::set1(k), Simd::set1(-k * r * bq), Simd::set1(-k * a)};
}

inline F load(const float* p, int n) { return n == kLanes ? Simd::load(p) : Simd::load_n(p, n); }
inline void store(float* p, F v, int n) {
  if (n == kLanes) {
    Simd::store(p, v);
  } else {
    Simd::store_n(p, v, n);
  }
}

// y = (x - m) * g + b over one plane, then the fused activation (kNone or kRelu).
inline void normalize_plane(const float* in, float* out, int64_t s, float m, float g, float b,
                            bool relu) {
  const F vm = Simd::set1(m), vg = Simd::set1(g), vb = Simd::set1(b);
  if (relu) {
    for_each_vector(s, [&](int64_t i, int n) {
      store(out + i, Simd::relu(Simd::fmadd(Simd::sub(load(in + i, n), vm), vg, vb)), n);
    });
  } else {
    for_each_vector(s, [&](int64_t i, int n) {
      store(out + i, Simd::fmadd(Simd::sub(load(in + i, n), vm), vg, vb), n);
    });
  }
}

// A channel's statistics over its B planes at xp + (b * channels + c) * s: saves mean[c], rstd[c]
// and the running statistics, and returns the affine map y = (x - m) * g + b of the channel.
struct ChannelAffine {
  float m, g, b;
};
ChannelAffine channel_statistics(const float* xp, int64_t batch, int64_t channels, int64_t s,
                                 int64_t c, const Tensor& gamma, const Tensor& beta, float eps,
                                 float momentum, Tensor& running_mean, Tensor& running_var,
                                 Tensor& mean, Tensor& rstd) {
  const int64_t n = batch * s;
  // Sums of d = x - pivot and of d^2, in double (see the top of this file).
  const float pivot = xp[c * s];
  const F vp = Simd::set1(pivot);
  Simd::Acc sum[2], sum_sq[2];
  for (int64_t b = 0; b < batch; ++b) {
    const float* in = xp + (b * channels + c) * s;
    for_each_vector_alternating(s, [&](int64_t i, int k, auto half) {
      F d = Simd::sub(load(in + i, k), vp);
      if (k != kLanes) d = Simd::keep_n(d, k);
      Simd::add(sum[half], d);
      Simd::add_product(sum_sq[half], d, d);
    });
  }
  const double total_sum = total(sum), total_sq = total(sum_sq);
  const double shift = total_sum / static_cast<double>(n);  // mean - pivot
  const double sq = std::max(total_sq - total_sum * shift, 0.0);
  const double var = sq / static_cast<double>(n);
  const float r = static_cast<float>(1.0 / std::sqrt(var + eps));
  const float m = static_cast<float>(double{pivot} + shift);
  mean.data()[c] = m;
  rstd.data()[c] = r;
  const double unbiased = n > 1 ? sq / static_cast<double>(n - 1) : var;
  running_mean.data()[c] = (1.0f - momentum) * running_mean.data()[c] + momentum * m;
  running_var.data()[c] =
      (1.0f - momentum) * running_var.data()[c] + momentum * static_cast<float>(unbiased);
  return {m, gamma.data()[c] * r, beta.data()[c]};
}

// The backward's pass 1 over one plane: the sums of dy and of dy * (x - mean), in double; with
// kMask, dy counts where y > 0 only (the fused ReLU). dy is 0 past the plane's end.
template <bool kMask>
inline void grad_sums_plane(const float* dy, const float* y, const float* x, int64_t s, F vm,
                            Simd::Acc (&sum_dy)[2], Simd::Acc (&sum_dy_xm)[2]) {
  for_each_vector_alternating(s, [&](int64_t i, int k, auto half) {
    F gv = load(dy + i, k);
    if constexpr (kMask) gv = Simd::where_positive(load(y + i, k), gv);
    Simd::add(sum_dy[half], gv);
    Simd::add_product(sum_dy_xm[half], gv, Simd::sub(load(x + i, k), vm));
  });
}

// The backward's pass 2 over one plane: dx = k dy + (x - mean) slope + offset (see
// batch_norm_grad), dy masked as in grad_sums_plane.
template <bool kMask>
inline void grad_dx_plane(const float* dy, const float* y, const float* x, float* dx, int64_t s,
                          F vm, F vk, F vslope, F voff) {
  for_each_vector(s, [&](int64_t i, int n) {
    F gv = load(dy + i, n);
    if constexpr (kMask) gv = Simd::where_positive(load(y + i, n), gv);
    const F xm = Simd::sub(load(x + i, n), vm);
    store(dx + i, Simd::fmadd(gv, vk, Simd::fmadd(xm, vslope, voff)), n);
  });
}

// The gradient dz[H,W] of one plane at the ReLU's output, from the pooled y, argmax and dy
// ([OH,OW] each): dy at the argmax where y > 0, 0 elsewhere, the values max_pool2d_backward and
// the ReLU's mask give (masked: OH*OW floats of scratch).
void unpool_relu_grad(const float* y, const int32_t* arg, const float* dy, int64_t h, int64_t w,
                      int64_t oh, int64_t ow, float* masked, float* dz) {
  const int64_t ohw = oh * ow;
  if (h % 2 == 0 && w % 2 == 0) {
    // The windows tile the plane: the pooling's backward writes every element (max_pool2d's).
    for_each_vector(ohw, [&](int64_t i, int n) {
      store(masked + i, Simd::where_positive(load(y + i, n), load(dy + i, n)), n);
    });
    cpu::max_pool_2x2_backward_plane(arg, masked, oh, ow, dz);
    return;
  }
  // As max_pool2d_backward's general loop: a zeroed plane, each gradient added to it.
  std::fill(dz, dz + h * w, 0.0f);
  for (int64_t j = 0; j < ohw; ++j) {
    if (y[j] > 0.0f) dz[arg[j]] = 0.0f + dy[j];
  }
}

// batch_norm_relu_pool_*'s scratch per thread for x[B,C,H,W]: a channel's B planes of the
// ReLU's gradient and a pooled plane (the forward uses the first plane).
int64_t per_thread_floats(const Shape& x) { return x[0] * x[2] * x[3] + (x[2] / 2) * (x[3] / 2); }

}  // namespace

void CpuBackend::batch_norm_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                  float eps, float momentum, Tensor& running_mean,
                                  Tensor& running_var, Tensor& mean, Tensor& rstd, Tensor& y,
                                  bool relu) {
  const int64_t batch = x.dim(0), channels = x.dim(1), s = spatial(x);
  const float* xp = x.data();
  float* yp = y.data();
  pool_.parallel_for(channels, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const ChannelAffine a = channel_statistics(xp, batch, channels, s, c, gamma, beta, eps,
                                                 momentum, running_mean, running_var, mean, rstd);
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t off = (b * channels + c) * s;
        normalize_plane(xp + off, yp + off, s, a.m, a.g, a.b, relu);
      }
    }
  });
}

void CpuBackend::batch_norm_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 float eps, const Tensor& running_mean, const Tensor& running_var,
                                 Tensor& y, bool relu) {
  const int64_t batch = x.dim(0), channels = x.dim(1), s = spatial(x);
  const float* xp = x.data();
  float* yp = y.data();
  pool_.parallel_for(batch * channels, kMinPlanesPerThread, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c = p % channels;
      const float g = gamma.data()[c] / std::sqrt(running_var.data()[c] + eps);
      normalize_plane(xp + p * s, yp + p * s, s, running_mean.data()[c], g, beta.data()[c], relu);
    }
  });
}

void CpuBackend::batch_norm_grad(const Tensor& x, const Tensor* relu_y, const Tensor& gamma,
                                 const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                                 Tensor* dx, Tensor& dgamma, Tensor& dbeta) {
  const int64_t batch = x.dim(0), channels = x.dim(1), s = spatial(x);
  const float inv_n = 1.0f / static_cast<float>(batch * s);
  const float* xp = x.data();
  const float* g = dy.data();
  // dy, or with the ReLU fused dy where y > 0 and 0 elsewhere.
  const float* yp = relu_y ? relu_y->data() : nullptr;
  float* dxp = dx ? dx->data() : nullptr;
  pool_.parallel_for(channels, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const float m = mean.data()[c], r = rstd.data()[c];
      const F vm = Simd::set1(m);
      // Pass 1: the sums of dy and of dy * (x - mean), in double.
      Simd::Acc sum_dy[2], sum_dy_xm[2];
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t off = (b * channels + c) * s;
        if (yp != nullptr) {
          grad_sums_plane<true>(g + off, yp + off, xp + off, s, vm, sum_dy, sum_dy_xm);
        } else {
          grad_sums_plane<false>(g + off, nullptr, xp + off, s, vm, sum_dy, sum_dy_xm);
        }
      }
      const DxCoefficients d = channel_grads(sum_dy, sum_dy_xm, gamma.data()[c], r, inv_n,
                                             dgamma.data()[c], dbeta.data()[c]);
      if (dxp == nullptr) continue;
      // Pass 2: dx from the coefficients.
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t off = (b * channels + c) * s;
        if (yp != nullptr) {
          grad_dx_plane<true>(g + off, yp + off, xp + off, dxp + off, s, vm, d.k, d.slope,
                              d.offset);
        } else {
          grad_dx_plane<false>(g + off, nullptr, xp + off, dxp + off, s, vm, d.k, d.slope,
                               d.offset);
        }
      }
    }
  });
}

int64_t CpuBackend::batch_norm_relu_pool_workspace(const Shape& x) const {
  return static_cast<int64_t>(num_threads()) * per_thread_floats(x);
}

void CpuBackend::batch_norm_relu_pool_forward_train(const Tensor& x, const Tensor& gamma,
                                                    const Tensor& beta, float eps, float momentum,
                                                    Tensor& running_mean, Tensor& running_var,
                                                    Tensor& mean, Tensor& rstd, Tensor& y,
                                                    std::span<int32_t> argmax,
                                                    std::span<float> work) {
  const int64_t batch = x.dim(0), channels = x.dim(1), h = x.dim(2), w = x.dim(3), s = h * w;
  const int64_t oh = y.dim(2), ow = y.dim(3), ohw = oh * ow;
  const float* xp = x.data();
  float* yp = y.data();
  int32_t* ap = argmax.data();
  // Thread t takes the t-th of `parts` contiguous ranges of channels (as parallel_for would)
  // and normalizes each plane into its scratch, which the pooling then reads.
  const int parts = static_cast<int>(std::min<int64_t>(num_threads(), channels));
  pool_.run([&](int t) {
    if (t >= parts) return;
    const int64_t c0 = channels * t / parts, c1 = channels * (t + 1) / parts;
    float* plane = work.data() + t * per_thread_floats(x.shape());
    for (int64_t c = c0; c < c1; ++c) {
      const ChannelAffine a = channel_statistics(xp, batch, channels, s, c, gamma, beta, eps,
                                                 momentum, running_mean, running_var, mean, rstd);
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t p = b * channels + c;
        normalize_plane(xp + p * s, plane, s, a.m, a.g, a.b, true);
        cpu::max_pool_2x2_plane(plane, w, oh, ow, yp + p * ohw, ap + p * ohw);
      }
    }
  });
}

void CpuBackend::batch_norm_relu_pool_backward(const Tensor& x, const Tensor& y,
                                               std::span<const int32_t> argmax, const Tensor& gamma,
                                               const Tensor& mean, const Tensor& rstd,
                                               const Tensor& dy, Tensor* dx, Tensor& dgamma,
                                               Tensor& dbeta, std::span<float> work) {
  const int64_t batch = x.dim(0), channels = x.dim(1), h = x.dim(2), w = x.dim(3), s = h * w;
  const int64_t oh = y.dim(2), ow = y.dim(3), ohw = oh * ow;
  const int64_t per_thread = per_thread_floats(x.shape());
  const float inv_n = 1.0f / static_cast<float>(batch * s);
  const float* xp = x.data();
  const float* yp = y.data();
  const float* g = dy.data();
  const int32_t* ap = argmax.data();
  float* dxp = dx ? dx->data() : nullptr;
  // As batch_norm_grad with the ReLU fused, a channel's gradient at the ReLU's output rebuilt
  // plane by plane into the thread's scratch (still in its L2 cache for the second pass) instead
  // of read from a full-size one.
  const int parts = static_cast<int>(std::min<int64_t>(num_threads(), channels));
  pool_.run([&](int t) {
    if (t >= parts) return;
    const int64_t c0 = channels * t / parts, c1 = channels * (t + 1) / parts;
    float* dz = work.data() + t * per_thread;
    float* masked = dz + batch * s;
    for (int64_t c = c0; c < c1; ++c) {
      const float m = mean.data()[c], r = rstd.data()[c];
      const F vm = Simd::set1(m);
      Simd::Acc sum_dy[2], sum_dy_xm[2];
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t p = b * channels + c;
        unpool_relu_grad(yp + p * ohw, ap + p * ohw, g + p * ohw, h, w, oh, ow, masked, dz + b * s);
        grad_sums_plane<false>(dz + b * s, nullptr, xp + p * s, s, vm, sum_dy, sum_dy_xm);
      }
      const DxCoefficients d = channel_grads(sum_dy, sum_dy_xm, gamma.data()[c], r, inv_n,
                                             dgamma.data()[c], dbeta.data()[c]);
      if (dxp == nullptr) continue;
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t p = b * channels + c;
        grad_dx_plane<false>(dz + b * s, nullptr, xp + p * s, dxp + p * s, s, vm, d.k, d.slope,
                             d.offset);
      }
    }
  });
}

void CpuBackend::batch_norm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          float eps, float momentum, Tensor& running_mean,
                                          Tensor& running_var, Tensor& mean, Tensor& rstd,
                                          Tensor& y) {
  batch_norm_train(x, gamma, beta, eps, momentum, running_mean, running_var, mean, rstd, y, false);
}

void CpuBackend::batch_norm_relu_forward_train(const Tensor& x, const Tensor& gamma,
                                               const Tensor& beta, float eps, float momentum,
                                               Tensor& running_mean, Tensor& running_var,
                                               Tensor& mean, Tensor& rstd, Tensor& y) {
  batch_norm_train(x, gamma, beta, eps, momentum, running_mean, running_var, mean, rstd, y, true);
}

void CpuBackend::batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         float eps, const Tensor& running_mean,
                                         const Tensor& running_var, Tensor& y) {
  batch_norm_eval(x, gamma, beta, eps, running_mean, running_var, y, false);
}

void CpuBackend::batch_norm_relu_forward_eval(const Tensor& x, const Tensor& gamma,
                                              const Tensor& beta, float eps,
                                              const Tensor& running_mean, const Tensor& running_var,
                                              Tensor& y) {
  batch_norm_eval(x, gamma, beta, eps, running_mean, running_var, y, true);
}

void CpuBackend::batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                     const Tensor& rstd, const Tensor& dy, Tensor* dx,
                                     Tensor& dgamma, Tensor& dbeta) {
  batch_norm_grad(x, nullptr, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}

void CpuBackend::batch_norm_relu_backward(const Tensor& x, const Tensor& y, const Tensor& gamma,
                                          const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                                          Tensor* dx, Tensor& dgamma, Tensor& dbeta,
                                          std::span<float> /*work*/) {
  batch_norm_grad(x, &y, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}

}  // namespace tuner::training
