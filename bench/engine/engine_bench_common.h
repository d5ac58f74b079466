// Pieces the engine benchmarks share (engine_vs_pytorch.cc, zoo/engine_zoo.cc): clocks, the
// training FLOPs of a model spec, the peak of a large GEMM on a backend, and JSON string escaping
// for the lines they print.
#ifndef TUNER_BENCH_ENGINE_ENGINE_BENCH_COMMON_H_
#define TUNER_BENCH_ENGINE_ENGINE_BENCH_COMMON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "training/backend.h"
#include "training/model_spec.h"

namespace tuner::bench {

// Wall-clock seconds (steady clock) since an arbitrary origin.
double now_seconds();

// CPU seconds used by every thread of this process so far: unlike the wall clock, it does not
// count the time other jobs on a shared machine hold the cores.
double process_cpu_seconds();

// Training FLOPs per sample of the GEMM-shaped layers (linear, conv2d, residual projections):
// 2 per multiply-add, times 3 (the forward, the input gradient and the weight gradient; the first
// layer's input gradient is counted too, as the usual 6 * params rule does). Element-wise layers
// (activations, norms, pools, residual adds) are not counted.
double training_flops(const std::vector<training::LayerSpec>& layers);

// The best of 5 timings of an n x n x n float32 GEMM on `backend`, in GFLOP/s (2 n^3 per product).
double gemm_peak_gflops(training::Backend& backend, int64_t n);

// `text` escaped for the inside of a JSON string (quotes, backslashes, control characters).
std::string json_escape(std::string_view text);

}  // namespace tuner::bench

#endif  // TUNER_BENCH_ENGINE_ENGINE_BENCH_COMMON_H_
