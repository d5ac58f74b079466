// An experiment kept for the record (issue 16, session 15), not part of the build: a bf16 GEMM of
// the engine's own on AMX tiles, y[m,n] = x[m,k] w[n,k]^T from fp32 inputs, rounding fused into
// packing (x into 16-row panels of contiguous 16x32 tiles, w VNNI-packed into 16-column panels),
// a 2x2-tile kernel (32x32 of y per K loop), against Debian's oneDNN 2.6.3 matmul with bf16 inputs.
//   g++ -O2 -std=c++20 -march=native -mamx-tile -mamx-bf16 THIS.cc -o amx -ldnnl -fopenmp
//   SHOWPACK=1 ./amx 1024 2048 2048
// 2026-12-04 22:45 UTC, one thread of the 2-core Intel Xeon (cpuid family 6, model 167; AMX):
//   1024x2048x2048: this 526-548 GFLOP/s including its packing (2.7 ms of 16 ms), so about 630 for
//   the tiles alone; oneDNN 2.6.3's product alone 653-695 (the harness's own scalar rounding in
//   front of it: 326-356). 512x1024x1024: 494 against 714; 256x2048x2048: 431 against 676.
//   The oneDNN 3.13.3 inside PyTorch 2.15: 1,225 for 2048^3 (torch.matmul, one thread).
// So a simple tile kernel does not beat oneDNN 2.6.3's product; reaching PyTorch's needs cache
// blocking of the K loop (B tiles reused from L1 across the M loop) and prefetching. The results
// agree with oneDNN's to 7.6e-6 (sums in another order).
// Experiment: a bf16 AMX GEMM packing fp32 inputs (rounding fused), c[m,n] = a[m,k] * b[k,n]^T-ish.
// Here: y[m,n] = x[m,k] * w[n,k]^T (the linear forward: both operands K-contiguous).
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

static inline uint16_t bf(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}
// 16 floats -> 16 bf16, RNE (no NaN care here)
static inline __m256i bf16x16(__m512 v) {
  __m512i u = _mm512_castps_si512(v);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  u = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(u, 16));
}

struct TileCfg {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Pack rows [r0, r0+rows) of a K-contiguous fp32 matrix (ld) into bf16 [rows_p x kp], zero padded.
static void pack_rows(const float* a, int64_t ld, int64_t rows, int64_t k, int64_t rows_p, int64_t kp,
                      uint16_t* out) {
  for (int64_t r = 0; r < rows_p; ++r) {
    uint16_t* o = out + r * kp;
    if (r >= rows) { std::memset(o, 0, kp * 2); continue; }
    const float* in = a + r * ld;
    int64_t j = 0;
    for (; j + 16 <= k; j += 16) _mm256_storeu_si256((__m256i*)(o + j), bf16x16(_mm512_loadu_ps(in + j)));
    for (; j < k; ++j) o[j] = bf(in[j]);
    for (; j < kp; ++j) o[j] = 0;
  }
}
// VNNI-pack w[n,k] (K-contiguous rows) into panels of 16 columns: panel p: [kp/2][16][2].
// Pack rows into panels of 16 rows: panel g, k block kb: 16x32 bf16 contiguous (1 KB).
static void pack_a_tiles(const float* a, int64_t ld, int64_t rows, int64_t k, int64_t rows_p, int64_t kp,
                         uint16_t* out) {
  for (int64_t r = 0; r < rows_p; ++r) {
    const int64_t g = r / 16, rr = r % 16;
    uint16_t* base = out + g * 16 * kp + rr * 32;
    const float* in = a + r * ld;
    for (int64_t kb = 0; kb < kp; kb += 32) {
      uint16_t* o = base + kb * 16;
      if (r < rows && kb + 32 <= k) {
        _mm256_storeu_si256((__m256i*)o, bf16x16(_mm512_loadu_ps(in + kb)));
        _mm256_storeu_si256((__m256i*)(o + 16), bf16x16(_mm512_loadu_ps(in + kb + 16)));
      } else {
        for (int j = 0; j < 32; ++j) o[j] = (r < rows && kb + j < k) ? bf(in[kb + j]) : 0;
      }
    }
  }
}
// Faster VNNI: per 16 columns x 32 k, round into tmp then transpose 32-bit pairs.
static void pack_vnni_fast(const float* w, int64_t ld, int64_t n, int64_t k, int64_t np, int64_t kp, uint16_t* out) {
  alignas(64) uint32_t tmp[16][16];
  for (int64_t p = 0; p < np / 16; ++p) {
    uint32_t* o = reinterpret_cast<uint32_t*>(out + p * kp * 16);
    for (int64_t kb = 0; kb < kp; kb += 32) {
      for (int c = 0; c < 16; ++c) {
        const int64_t col = p * 16 + c;
        uint16_t* t = reinterpret_cast<uint16_t*>(tmp[c]);
        if (col < n && kb + 32 <= k) {
          const float* in = w + col * ld + kb;
          _mm256_store_si256((__m256i*)t, bf16x16(_mm512_loadu_ps(in)));
          _mm256_store_si256((__m256i*)(t + 16), bf16x16(_mm512_loadu_ps(in + 16)));
        } else {
          for (int j = 0; j < 32; ++j) t[j] = (col < n && kb + j < k) ? bf(w[col * ld + kb + j]) : 0;
        }
      }
      uint32_t* ob = o + (kb / 2) * 16;
      for (int q = 0; q < 16; ++q)
        for (int c = 0; c < 16; ++c) ob[q * 16 + c] = tmp[c][q];
    }
  }
}
static void pack_vnni(const float* w, int64_t ld, int64_t n, int64_t k, int64_t np, int64_t kp, uint16_t* out) {
  for (int64_t p = 0; p < np / 16; ++p) {
    uint16_t* o = out + p * kp * 16;
    for (int64_t kk = 0; kk < kp; kk += 2) {
      for (int64_t c = 0; c < 16; ++c) {
        const int64_t col = p * 16 + c;
        uint16_t lo = 0, hi = 0;
        if (col < n) {
          if (kk < k) lo = bf(w[col * ld + kk]);
          if (kk + 1 < k) hi = bf(w[col * ld + kk + 1]);
        }
        o[(kk / 2) * 32 + c * 2] = lo;
        o[(kk / 2) * 32 + c * 2 + 1] = hi;
      }
    }
  }
}

static void amx_gemm(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
                     std::vector<uint16_t>& ap, std::vector<uint16_t>& bp) {
  const int64_t kp = (k + 31) / 32 * 32, mp = (m + 31) / 32 * 32, np = (n + 31) / 32 * 32;
  ap.resize(mp * kp); bp.resize(np * kp);
  static double tpack = 0; auto tp0 = std::chrono::steady_clock::now();
  pack_a_tiles(x, k, m, k, mp, kp, ap.data());
  pack_vnni_fast(w, k, n, k, np, kp, bp.data());
  tpack = std::chrono::duration<double>(std::chrono::steady_clock::now() - tp0).count();
  if (getenv("SHOWPACK")) fprintf(stderr, "pack %.2f ms\n", tpack * 1e3);
  TileCfg cfg;
  for (int t = 0; t < 8; ++t) { cfg.rows[t] = 16; cfg.colsb[t] = 64; }
  _tile_loadconfig(&cfg);
  alignas(64) float cbuf[4][16 * 16];
  const int64_t mc = 256;
  for (int64_t m0 = 0; m0 < mp; m0 += mc) {
    const int64_t m1 = std::min(mp, m0 + mc);
    for (int64_t j = 0; j < np; j += 32) {
      const uint16_t* b0 = bp.data() + (j / 16) * kp * 16;
      const uint16_t* b1 = b0 + kp * 16;
      for (int64_t i = m0; i < m1; i += 32) {
        const uint16_t* a0 = ap.data() + i * kp;
        const uint16_t* a1 = a0 + 16 * kp;  // panels: a0 + kk*16 is the 16x32 tile
        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
        for (int64_t kk = 0; kk < kp; kk += 32) {
          _tile_loadd(4, a0 + kk * 16, 64);
          _tile_loadd(5, a1 + kk * 16, 64);
          _tile_loadd(6, b0 + kk * 16, 64);
          _tile_loadd(7, b1 + kk * 16, 64);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, cbuf[0], 64); _tile_stored(1, cbuf[1], 64);
        _tile_stored(2, cbuf[2], 64); _tile_stored(3, cbuf[3], 64);
        for (int q = 0; q < 4; ++q) {
          const int64_t r0 = i + (q / 2) * 16, c0 = j + (q % 2) * 16;
          for (int r = 0; r < 16 && r0 + r < m; ++r) {
            const int64_t cols = std::min<int64_t>(16, n - c0);
            if (cols <= 0) continue;
            std::memcpy(y + (r0 + r) * n + c0, cbuf[q] + r * 16, cols * 4);
          }
        }
      }
    }
  }
  _tile_release();
}

int main(int argc, char** argv) {
  if (syscall(SYS_arch_prctl, 0x1023, 18)) { perror("arch_prctl"); return 1; }
  const int64_t m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]);
  std::vector<float> x(m * k), w(n * k), y(m * n), y2(m * n);
  std::mt19937 r(1); std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : x) v = u(r); for (auto& v : w) v = u(r);
  std::vector<uint16_t> ap, bp;
  double best = 1e9;
  for (int it = 0; it < 6; ++it) {
    auto t0 = std::chrono::steady_clock::now();
    amx_gemm(x.data(), w.data(), y.data(), m, n, k, ap, bp);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  printf("amx own (packing from fp32 included): %.1f GFLOP/s\n", 2.0 * m * n * k / best / 1e9);
  // oneDNN reference: round then bf16 matmul, same y = x w^T
  omp_set_num_threads(1);
  using namespace dnnl; using dt = memory::data_type;
  engine eng(engine::kind::cpu, 0); stream s(eng);
  std::vector<uint16_t> x16(m * k), w16(n * k);
  memory::desc a({m, k}, dt::bf16, {k, 1}), b({k, n}, dt::bf16, {1, k}), c({m, n}, dt::f32, {n, 1});
  matmul mm(matmul::primitive_desc(matmul::desc(a, b, c), eng));
  memory ma(a, eng, x16.data()), mb(b, eng, w16.data()), mc(c, eng, y2.data());
  double best2 = 1e9, best3 = 1e9;
  for (int it = 0; it < 6; ++it) {
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < x.size(); ++i) x16[i] = bf(x[i]);
    for (size_t i = 0; i < w.size(); ++i) w16[i] = bf(w[i]);
    auto t1 = std::chrono::steady_clock::now();
    mm.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    auto t2 = std::chrono::steady_clock::now();
    best2 = std::min(best2, std::chrono::duration<double>(t2 - t0).count());
    best3 = std::min(best3, std::chrono::duration<double>(t2 - t1).count());
  }
  printf("oneDNN 2.6.3: with rounding %.1f, product alone %.1f GFLOP/s\n", 2.0 * m * n * k / best2 / 1e9, 2.0 * m * n * k / best3 / 1e9);
  double md = 0, same = 0;
  for (size_t i = 0; i < y.size(); ++i) { md = std::max(md, (double)std::fabs(y[i] - y2[i])); same += y[i] == y2[i]; }
  printf("max |diff| %.3g, identical %.0f of %zu\n", md, same, y.size());
}
