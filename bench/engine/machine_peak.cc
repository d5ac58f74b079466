#include "bench/engine/machine_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "training/backends/cpu/cpu_kernels.h"

namespace tuner::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Cycles per second: 64 dependent register adds per turn take 64 cycles (one add per cycle on every
// x86-64 core; a register operand, since some cores fold chains of immediate adds); the loop's own
// counter runs beside them.
double measure_clock_ghz() {
  constexpr long kTurns = 5'000'000;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    long x = 0, n = kTurns, one = 1;
    const auto t = Clock::now();
    __asm__ volatile(
        "1:\n"
        ".rept 64\n"
        "add %2, %0\n"
        ".endr\n"
        "dec %1\n"
        "jnz 1b\n"
        : "+r"(x), "+r"(n)
        : "r"(one));
    best = std::max(best, 64.0 * kTurns / seconds_since(t) / 1e9);
  }
  return best;
}

// Floating-point operations per second of one thread's 12 independent vector FMA chains (enough
// to cover a 4-cycle latency on two units). V is the vector type, FMA its multiply-add.
#define TUNER_FMA_CHAINS(V, SET1, FMA, LANES, STORE)                                     \
  V a0 = SET1(1.0f), a1 = SET1(1.1f), a2 = SET1(1.2f), a3 = SET1(1.3f), a4 = SET1(1.4f), \
    a5 = SET1(1.5f), a6 = SET1(1.6f), a7 = SET1(1.7f), a8 = SET1(1.8f), a9 = SET1(1.9f), \
    a10 = SET1(2.0f), a11 = SET1(2.1f);                                                  \
  const V m = SET1(0.999999f), c = SET1(1e-7f);                                          \
  const auto t = Clock::now();                                                           \
  for (long i = 0; i < turns; ++i) {                                                     \
    a0 = FMA(a0, m, c);                                                                  \
    a1 = FMA(a1, m, c);                                                                  \
    a2 = FMA(a2, m, c);                                                                  \
    a3 = FMA(a3, m, c);                                                                  \
    a4 = FMA(a4, m, c);                                                                  \
    a5 = FMA(a5, m, c);                                                                  \
    a6 = FMA(a6, m, c);                                                                  \
    a7 = FMA(a7, m, c);                                                                  \
    a8 = FMA(a8, m, c);                                                                  \
    a9 = FMA(a9, m, c);                                                                  \
    a10 = FMA(a10, m, c);                                                                \
    a11 = FMA(a11, m, c);                                                                \
  }                                                                                      \
  const double s = seconds_since(t);                                                     \
  alignas(64) float out[LANES];                                                          \
  STORE(out, a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11);               \
  volatile float sink = out[0];                                                          \
  (void)sink;                                                                            \
  return 12.0 * LANES * 2 * static_cast<double>(turns) / s;

__attribute__((target("avx512f"))) double fma_chains_avx512(long turns) {
  TUNER_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, 16, _mm512_store_ps)
}

__attribute__((target("avx2,fma"))) double fma_chains_avx2(long turns) {
  TUNER_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, 8, _mm256_store_ps)
}

inline __m128 mul_add_sse(__m128 a, __m128 m, __m128 c) { return _mm_add_ps(_mm_mul_ps(a, m), c); }

double mul_add_chains_sse(long turns) {
  TUNER_FMA_CHAINS(__m128, _mm_set1_ps, mul_add_sse, 4, _mm_store_ps)
}

#undef TUNER_FMA_CHAINS

}  // namespace

MachinePeak measure_machine_peak(int threads) {
  MachinePeak peak;
  peak.threads = std::max(1, threads);
  const training::VectorIsa isa = training::widest_isa(training::detect_cpu_features());
  double (*chains)(long) = mul_add_chains_sse;
  peak.isa = "SSE";
  peak.lanes = 4;
  if (isa == training::VectorIsa::kAvx512) {
    chains = fma_chains_avx512;
    peak.isa = "AVX-512";
    peak.lanes = 16;
  } else if (isa == training::VectorIsa::kAvx2) {
    chains = fma_chains_avx2;
    peak.isa = "AVX2";
    peak.lanes = 8;
  }
  constexpr long kTurns = 50'000'000;
  chains(kTurns / 20);  // warm up (the vector units' power-up, the clock's ramp)
  // The FMA rate of every thread at once.
  std::vector<double> rates(static_cast<size_t>(peak.threads));
  {
    std::vector<std::thread> others;
    for (int t = 1; t < peak.threads; ++t) {
      others.emplace_back([&, t] { rates[static_cast<size_t>(t)] = chains(kTurns); });
    }
    rates[0] = chains(kTurns);
    for (auto& t : others) t.join();
  }
  // The clock of one thread while the others keep their FMA chains going (the all-core clock).
  std::atomic<bool> done = false;
  std::vector<std::thread> others;
  for (int t = 1; t < peak.threads; ++t) {
    others.emplace_back([&] {
      while (!done) chains(kTurns / 50);
    });
  }
  const double clock = measure_clock_ghz();
  done = true;
  for (auto& t : others) t.join();
  peak.clock_ghz = clock;
  for (double r : rates) peak.measured_gflops += r / 1e9;
  const double one_unit = peak.lanes * 2.0 * clock;  // GFLOP/s of one FMA unit at that clock
  peak.fma_units =
      std::max(1, static_cast<int>(std::lround(peak.measured_gflops / peak.threads / one_unit)));
  peak.theoretical_gflops = peak.threads * one_unit * peak.fma_units;
  return peak;
}

}  // namespace tuner::bench
