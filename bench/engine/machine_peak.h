// The machine's own float32 peak for the engine benchmark: its clock measured
// with a chain of dependent adds, its FMA rate measured with independent FMA chains of the widest
// vector ISA the CPU has, on `threads` threads at once, and the theoretical peak they imply
// (threads x lanes x 2 flops x FMA units x clock). A model's GFLOP/s is then a fraction of the
// machine's peak, not of the engine's own GEMM.
#ifndef TUNER_BENCH_ENGINE_MACHINE_PEAK_H_
#define TUNER_BENCH_ENGINE_MACHINE_PEAK_H_

#include <string>

namespace tuner::bench {

struct MachinePeak {
  std::string isa;  // of the FMA chains: "AVX-512", "AVX2" or "SSE" (mul + add)
  int lanes = 4;    // floats per vector
  int threads = 1;
  double clock_ghz = 0;           // measured on one thread while the others ran their chains
  int fma_units = 1;              // per core: the measured FMA rate over one unit's, rounded
  double measured_gflops = 0;     // all threads' FMA chains
  double theoretical_gflops = 0;  // threads x lanes x 2 x fma_units x clock
};

MachinePeak measure_machine_peak(int threads);

}  // namespace tuner::bench

#endif  // TUNER_BENCH_ENGINE_MACHINE_PEAK_H_
