// The 2x2, stride 2, unpadded max pooling of one plane, forward and backward, shared by the
// max_pool2d_* kernels and the fused conv2d_pool_* kernels of the CPU backend (internal).
#ifndef TUNER_TRAINING_BACKENDS_CPU_MAX_POOL_2X2_H_
#define TUNER_TRAINING_BACKENDS_CPU_MAX_POOL_2X2_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace tuner::training::cpu {

#ifdef __AVX2__
// A mask of the lanes [0, n) of eight (n may be <= 0 or >= 8).
inline __m256i lanes_below(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(std::clamp<int64_t>(n, 0, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Stores the first n (<= 0 to 8) lanes of v at p (4-byte elements). Masked stores
// (vmaskmovps) are slow on AMD's cores, so a partial vector goes through the stack.
inline void store_first(void* p, __m256 v, int64_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(static_cast<float*>(p), v);
  } else if (n > 0) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    std::memcpy(p, lanes, static_cast<size_t>(n) * sizeof(float));
  }
}
#endif

// in[H,W] (row stride w) -> out[OH,OW], arg[OH,OW] (flat index in the plane), OH = H / 2,
// OW = W / 2: the same maxima and argmax (the first maximum in window order wins; a NaN first
// element stays) as the general pooling loop, without its bounds checks. With kReluFirst, the
// pooling of relu(in) (v > 0 ? v : 0, as cpu::apply_activation computes it), without a pass of
// its own over in.
template <bool kReluFirst = false>
void max_pool_2x2_plane(const float* in, int64_t w, int64_t oh, int64_t ow, float* out,
                        int32_t* arg) {
  const int32_t w32 = static_cast<int32_t>(w);
  for (int64_t i = 0; i < oh; ++i) {
    const float* r0 = in + 2 * i * w;
    const float* r1 = r0 + w;
    const int32_t base = static_cast<int32_t>(2 * i * w);
    int64_t j = 0;
#ifdef __AVX2__
    // Eight windows at a time, with the scalar loop's comparisons (ordered >: a NaN never wins).
    // The even/odd split leaves the windows in the order 0 1 4 5 2 3 6 7, which the last
    // permutation undoes.
    const __m256i offsets = _mm256_setr_epi32(0, 2, 8, 10, 4, 6, 12, 14);
    for (; j < ow; j += 8) {
      // The last windows of a row (fewer than eight: a whole row at the widths of small CNNs)
      // go through masked loads and partial stores.
      const int64_t n = std::min<int64_t>(8, ow - j);
      const __m256i in_lo = lanes_below(2 * n), in_hi = lanes_below(2 * n - 8);
      __m256 a0 = _mm256_maskload_ps(r0 + 2 * j, in_lo);
      __m256 a1 = _mm256_maskload_ps(r0 + 2 * j + 8, in_hi);
      __m256 b0 = _mm256_maskload_ps(r1 + 2 * j, in_lo);
      __m256 b1 = _mm256_maskload_ps(r1 + 2 * j + 8, in_hi);
      if constexpr (kReluFirst) {
        // maxps returns its second operand, +0, for a NaN or a zero of either sign: v > 0 ? v : 0.
        const __m256 zero = _mm256_setzero_ps();
        a0 = _mm256_max_ps(a0, zero);
        a1 = _mm256_max_ps(a1, zero);
        b0 = _mm256_max_ps(b0, zero);
        b1 = _mm256_max_ps(b1, zero);
      }
      const __m256 v1 = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
      const __m256 v2 = _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0));
      const __m256 v3 = _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1));
      const __m256i at =
          _mm256_add_epi32(_mm256_set1_epi32(base + static_cast<int32_t>(2 * j)), offsets);
      __m256 best = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
      __m256i best_at = at;
      __m256 m = _mm256_cmp_ps(v1, best, _CMP_GT_OQ);
      best = _mm256_blendv_ps(best, v1, m);
      best_at = _mm256_blendv_epi8(best_at, _mm256_add_epi32(at, _mm256_set1_epi32(1)),
                                   _mm256_castps_si256(m));
      m = _mm256_cmp_ps(v2, best, _CMP_GT_OQ);
      best = _mm256_blendv_ps(best, v2, m);
      best_at = _mm256_blendv_epi8(best_at, _mm256_add_epi32(at, _mm256_set1_epi32(w32)),
                                   _mm256_castps_si256(m));
      m = _mm256_cmp_ps(v3, best, _CMP_GT_OQ);
      best = _mm256_blendv_ps(best, v3, m);
      best_at = _mm256_blendv_epi8(best_at, _mm256_add_epi32(at, _mm256_set1_epi32(w32 + 1)),
                                   _mm256_castps_si256(m));
      best =
          _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(best), _MM_SHUFFLE(3, 1, 2, 0)));
      best_at = _mm256_permute4x64_epi64(best_at, _MM_SHUFFLE(3, 1, 2, 0));
      store_first(out + i * ow + j, best, n);
      store_first(arg + i * ow + j, _mm256_castsi256_ps(best_at), n);
    }
#endif
    const auto value = [](float v) {
      if constexpr (kReluFirst) return v > 0.0f ? v : 0.0f;
      return v;
    };
    for (; j < ow; ++j) {
      const int32_t at = base + static_cast<int32_t>(2 * j);
      const float v1 = value(r0[2 * j + 1]), v2 = value(r1[2 * j]), v3 = value(r1[2 * j + 1]);
      float best = value(r0[2 * j]);
      int32_t best_at = at;
      if (v1 > best) best = v1, best_at = at + 1;
      if (v2 > best) best = v2, best_at = at + w32;
      if (v3 > best) best = v3, best_at = at + w32 + 1;
      out[i * ow + j] = best;
      arg[i * ow + j] = best_at;
    }
  }
}

// The backward of max_pool_2x2_plane where the windows tile the plane (H = 2 * OH,
// W = 2 * OW): every element of dx[H,W] is written once, with the gradient g[OH,OW] of the window
// whose maximum it is (arg[OH,OW], flat indices) or zero.
inline void max_pool_2x2_backward_plane(const int32_t* arg, const float* g, int64_t oh, int64_t ow,
                                        float* dx) {
  const int64_t w = 2 * ow;
  const int32_t w32 = static_cast<int32_t>(w);
  for (int64_t i = 0; i < oh; ++i) {
    float* r0 = dx + 2 * i * w;
    float* r1 = r0 + w;
    const int32_t base = static_cast<int32_t>(2 * i * w);
    int64_t j = 0;
#ifdef __AVX2__
    // Eight windows at a time: a mask per position of the window, then the even and odd columns
    // interleaved back into rows.
    const __m256i offsets = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i one = _mm256_set1_epi32(1), row = _mm256_set1_epi32(w32),
                  row_one = _mm256_set1_epi32(w32 + 1);
    for (; j < ow; j += 8) {
      const int64_t n = std::min<int64_t>(8, ow - j);  // masked loads, partial stores: the tail
      const __m256i in_mask = lanes_below(n);
      const __m256i top_left =
          _mm256_add_epi32(_mm256_set1_epi32(base + static_cast<int32_t>(2 * j)), offsets);
      const __m256i rel =
          _mm256_sub_epi32(_mm256_maskload_epi32(arg + i * ow + j, in_mask), top_left);
      const __m256 v = _mm256_maskload_ps(g + i * ow + j, in_mask);
      const __m256 e0 =
          _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_cmpeq_epi32(rel, _mm256_setzero_si256())));
      const __m256 o0 = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_cmpeq_epi32(rel, one)));
      const __m256 e1 = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_cmpeq_epi32(rel, row)));
      const __m256 o1 = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_cmpeq_epi32(rel, row_one)));
      const __m256 lo0 = _mm256_unpacklo_ps(e0, o0), hi0 = _mm256_unpackhi_ps(e0, o0);
      const __m256 lo1 = _mm256_unpacklo_ps(e1, o1), hi1 = _mm256_unpackhi_ps(e1, o1);
      store_first(r0 + 2 * j, _mm256_permute2f128_ps(lo0, hi0, 0x20), 2 * n);
      store_first(r0 + 2 * j + 8, _mm256_permute2f128_ps(lo0, hi0, 0x31), 2 * n - 8);
      store_first(r1 + 2 * j, _mm256_permute2f128_ps(lo1, hi1, 0x20), 2 * n);
      store_first(r1 + 2 * j + 8, _mm256_permute2f128_ps(lo1, hi1, 0x31), 2 * n - 8);
    }
#endif
    for (; j < ow; ++j) {
      const int32_t at = arg[i * ow + j];
      const int32_t top_left = base + static_cast<int32_t>(2 * j);
      const float v = g[i * ow + j];
      r0[2 * j] = at == top_left ? v : 0.0f;
      r0[2 * j + 1] = at == top_left + 1 ? v : 0.0f;
      r1[2 * j] = at == top_left + w32 ? v : 0.0f;
      r1[2 * j + 1] = at == top_left + w32 + 1 ? v : 0.0f;
    }
  }
}

}  // namespace tuner::training::cpu

#endif  // TUNER_TRAINING_BACKENDS_CPU_MAX_POOL_2X2_H_
