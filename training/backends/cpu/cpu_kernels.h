// The CPU the engine runs on, and the GEMM kernels it runs there (docs/training.md, "Kernels for
// the CPU at hand").
//
// OpenBLAS (a DYNAMIC_ARCH build, as Debian's) picks its kernels from a table of CPU models, and
// a model newer than the table gets the oldest kernels (SSE3 "Prescott" on a CPU with AVX-512).
// cpu_gemm_kernels() instead picks them from the CPU's feature bits: the widest vector ISA the CPU
// and its OS support, once per process, before the engine's first GEMM. An OPENBLAS_CORETYPE set
// by the user is left alone.
//
// Thread safety: every function is safe from any thread (the choice is made once, under a
// std::call_once).
#ifndef TUNER_TRAINING_BACKENDS_CPU_CPU_KERNELS_H_
#define TUNER_TRAINING_BACKENDS_CPU_CPU_KERNELS_H_

#include <optional>
#include <string>
#include <string_view>

namespace tuner::training {

// The vector ISA a kernel needs, narrowest first.
enum class VectorIsa { kSse, kAvx, kAvx2, kAvx512 };

std::string_view to_string(VectorIsa isa);  // "SSE", "AVX", "AVX2", "AVX-512"

// What the CPU offers (and the OS saves the registers of), read with cpuid.
struct CpuFeatures {
  std::string model_name;  // the brand string, e.g. "Intel(R) Xeon(R) Processor"
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512_bf16 = false;
  bool amx_tile = false;
  bool amx_bf16 = false;
};

CpuFeatures detect_cpu_features();

// The widest ISA whose kernels can run: AVX-512 needs F, BW, DQ and VL (what OpenBLAS's and
// oneDNN's AVX-512 kernels use), AVX2 needs FMA too.
VectorIsa widest_isa(const CpuFeatures& cpu);

// OpenBLAS's kernels for `isa` on `cpu`: "SkylakeX" (or "Cooperlake" with AVX512-BF16),
// "Haswell", "Sandybridge", "Prescott".
std::string openblas_core_for(VectorIsa isa, const CpuFeatures& cpu);

// The ISA an OpenBLAS core's kernels need (its corename, any case); nullopt for a name this
// table does not know.
std::optional<VectorIsa> openblas_core_isa(std::string_view core);

// OpenBLAS's kernels, which the engine's larger GEMMs run on in a build without oneDNN.
struct GemmKernels {
  std::string library;  // "OpenBLAS 0.3.21" or "Eigen" (a build without OpenBLAS)
  std::string core;     // OpenBLAS's core ("SkylakeX"); for Eigen, what it was compiled for
  std::optional<VectorIsa> isa;  // of those kernels; nullopt when the core is unknown
  // How they were chosen: "from the CPU's features", "OpenBLAS's own choice" (it matched),
  // "OPENBLAS_CORETYPE" (the user's), "compiled in" (Eigen).
  std::string chosen_by;
};

// Chooses OpenBLAS's kernels for this CPU on the first call (see above) and says which run.
const GemmKernels& cpu_gemm_kernels();

// What cpu_gemm_kernels() does once: keeps OpenBLAS's kernels when they fit the CPU, else has it
// load those of the CPU's widest ISA. REQUIRES: no GEMM under way. For tests; the engine calls
// cpu_gemm_kernels().
GemmKernels choose_gemm_kernels();
// Has OpenBLAS load the kernels of `core` (as OPENBLAS_CORETYPE would at start-up); false when it
// cannot (no OpenBLAS, or one built for a single CPU). REQUIRES: no GEMM under way. For tests.
bool load_openblas_core(const std::string& core);

// One line for logs and `tuner devices`: the CPU, then oneDNN's kernels (dnnl_matmul.h), or
// OpenBLAS's in a build without oneDNN:
//   "CPU Intel(R) Xeon(R) Processor: AVX-512, AVX512-BF16, AMX; GEMM kernels: oneDNN 2.6.3
//    avx512_core_amx (AVX-512, bf16 on AMX, from the CPU's features)"
//   "CPU AMD Ryzen 9 5900X: AVX2; GEMM kernels: OpenBLAS 0.3.21 Haswell (AVX2, from the CPU's
//    features)"
std::string describe_cpu_kernels();

}  // namespace tuner::training

#endif  // TUNER_TRAINING_BACKENDS_CPU_CPU_KERNELS_H_
