#include "training/backends/cpu/cpu_kernels.h"

#include <cpuid.h>
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#ifdef TUNER_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "training/backends/cpu/dnnl_matmul.h"

namespace tuner::training {

namespace {

bool bit(uint32_t word, int n) { return ((word >> n) & 1u) != 0; }

// The register state the OS saves on a context switch (XCR0); 0 without OSXSAVE.
uint64_t os_saved_state(uint32_t leaf1_ecx) {
  if (!bit(leaf1_ecx, 27)) return 0;  // OSXSAVE
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

std::string brand_string() {
  unsigned max = __get_cpuid_max(0x80000000u, nullptr);
  if (max < 0x80000004u) return "unknown CPU";
  char text[49] = {};
  for (unsigned i = 0; i < 3; ++i) {
    unsigned regs[4] = {};
    __get_cpuid(0x80000002u + i, &regs[0], &regs[1], &regs[2], &regs[3]);
    std::memcpy(text + 16 * i, regs, 16);
  }
  std::string name(text);
  name.erase(0, name.find_first_not_of(' '));
  while (!name.empty() && (name.back() == ' ' || name.back() == '\0')) name.pop_back();
  return name.empty() ? "unknown CPU" : name;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// What the Eigen kernels of this build were compiled for (-march=native: the build machine's).
[[maybe_unused]] VectorIsa compiled_isa() {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
  return VectorIsa::kAvx512;
#elif defined(__AVX2__) && defined(__FMA__)
  return VectorIsa::kAvx2;
#elif defined(__AVX__)
  return VectorIsa::kAvx;
#else
  return VectorIsa::kSse;
#endif
}

}  // namespace

// Re-runs OpenBLAS's kernel selection with OPENBLAS_CORETYPE = `core`. A DYNAMIC_ARCH build exports
// the two entry points it runs at load; without them (a build for one CPU) nothing changes.
bool load_openblas_core([[maybe_unused]] const std::string& core) {
#ifndef TUNER_HAVE_OPENBLAS
  return false;
#else
  using Entry = void (*)();
  auto quit = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (quit == nullptr || init == nullptr) return false;
  // OpenBLAS reads the variable; the previous value comes back so that child processes (trials)
  // make the same choice themselves rather than inherit a forced one.
  const char* before = std::getenv("OPENBLAS_CORETYPE");
  const std::optional<std::string> kept =
      before ? std::optional<std::string>(before) : std::nullopt;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  quit();
  init();
  if (kept) {
    setenv("OPENBLAS_CORETYPE", kept->c_str(), 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
  return true;
#endif
}

GemmKernels choose_gemm_kernels() {
#ifndef TUNER_HAVE_OPENBLAS
  return GemmKernels{.library = "Eigen",
                     .core = "compiled for " + std::string(to_string(compiled_isa())),
                     .isa = compiled_isa(),
                     .chosen_by = "compiled in"};
#else
  GemmKernels k;
  std::string config = openblas_get_config();  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
  const size_t version_end = config.find(' ', config.find(' ') + 1);
  k.library = config.substr(0, version_end);
  const CpuFeatures cpu = detect_cpu_features();
  const VectorIsa want = widest_isa(cpu);
  std::string core = openblas_get_corename();
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) {
    k.chosen_by = "OPENBLAS_CORETYPE";
  } else if (openblas_core_isa(core) == want) {
    k.chosen_by = "OpenBLAS's own choice";
  } else if (load_openblas_core(openblas_core_for(want, cpu))) {
    core = openblas_get_corename();
    k.chosen_by = "from the CPU's features";
  } else {
    k.chosen_by = "OpenBLAS's own choice (built for one CPU)";
  }
  k.core = core;
  k.isa = openblas_core_isa(core);
  return k;
#endif
}

std::string_view to_string(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kSse:
      return "SSE";
    case VectorIsa::kAvx:
      return "AVX";
    case VectorIsa::kAvx2:
      return "AVX2";
    case VectorIsa::kAvx512:
      return "AVX-512";
  }
  return "?";
}

CpuFeatures detect_cpu_features() {
  CpuFeatures cpu;
  cpu.model_name = brand_string();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return cpu;
  const uint64_t state = os_saved_state(ecx);
  const bool ymm = (state & 0x6) == 0x6;            // SSE and AVX state
  const bool zmm = ymm && (state & 0xe0) == 0xe0;   // opmask, ZMM_Hi256, Hi16_ZMM
  const bool tiles = (state & 0x60000) == 0x60000;  // TILECFG, TILEDATA
  cpu.avx = ymm && bit(ecx, 28);
  cpu.fma = cpu.avx && bit(ecx, 12);
  if (__get_cpuid_max(0, nullptr) < 7) return cpu;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  cpu.avx2 = cpu.avx && bit(ebx, 5);
  cpu.avx512f = zmm && bit(ebx, 16);
  cpu.avx512dq = cpu.avx512f && bit(ebx, 17);
  cpu.avx512bw = cpu.avx512f && bit(ebx, 30);
  cpu.avx512vl = cpu.avx512f && bit(ebx, 31);
  cpu.amx_bf16 = tiles && bit(edx, 22);
  cpu.amx_tile = tiles && bit(edx, 24);
  __cpuid_count(7, 1, eax, ebx, ecx, edx);
  cpu.avx512_bf16 = cpu.avx512f && bit(eax, 5);
  return cpu;
}

VectorIsa widest_isa(const CpuFeatures& cpu) {
  if (cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl) return VectorIsa::kAvx512;
  if (cpu.avx2 && cpu.fma) return VectorIsa::kAvx2;
  if (cpu.avx) return VectorIsa::kAvx;
  return VectorIsa::kSse;
}

std::string openblas_core_for(VectorIsa isa, const CpuFeatures& cpu) {
  switch (isa) {
    case VectorIsa::kAvx512:
      return cpu.avx512_bf16 ? "Cooperlake" : "SkylakeX";
    case VectorIsa::kAvx2:
      return "Haswell";
    case VectorIsa::kAvx:
      return "Sandybridge";
    case VectorIsa::kSse:
      return "Prescott";
  }
  return "Prescott";
}

std::optional<VectorIsa> openblas_core_isa(std::string_view core) {
  // OpenBLAS 0.3.21's x86-64 cores (driver/others/dynamic.c), by the kernels they run.
  static const std::vector<std::pair<std::string_view, VectorIsa>> kCores = {
      {"sapphirerapids", VectorIsa::kAvx512},
      {"cooperlake", VectorIsa::kAvx512},
      {"skylakex", VectorIsa::kAvx512},
      {"haswell", VectorIsa::kAvx2},
      {"zen", VectorIsa::kAvx2},
      {"excavator", VectorIsa::kAvx2},
      {"sandybridge", VectorIsa::kAvx},
      {"bulldozer", VectorIsa::kAvx},
      {"piledriver", VectorIsa::kAvx},
      {"steamroller", VectorIsa::kAvx},
      {"prescott", VectorIsa::kSse},
      {"core2", VectorIsa::kSse},
      {"penryn", VectorIsa::kSse},
      {"dunnington", VectorIsa::kSse},
      {"nehalem", VectorIsa::kSse},
      {"atom", VectorIsa::kSse},
      {"nano", VectorIsa::kSse},
      {"opteron", VectorIsa::kSse},
      {"opteron_sse3", VectorIsa::kSse},
      {"barcelona", VectorIsa::kSse},
      {"bobcat", VectorIsa::kSse},
  };
  const std::string name = lower(core);
  for (const auto& [known, isa] : kCores) {
    if (name == known) return isa;
  }
  return std::nullopt;
}

const GemmKernels& cpu_gemm_kernels() {
  static std::once_flag once;
  static GemmKernels kernels;
  std::call_once(once, [] { kernels = choose_gemm_kernels(); });
  return kernels;
}

std::string describe_cpu_kernels() {
  const CpuFeatures cpu = detect_cpu_features();
  std::string line = "CPU " + cpu.model_name + ": " + std::string(to_string(widest_isa(cpu)));
  if (cpu.avx512_bf16) line += ", AVX512-BF16";
  if (cpu.amx_tile && cpu.amx_bf16) line += ", AMX";
  const cpu::DnnlKernels& dnnl = cpu::dnnl_kernels();
  if (!dnnl.library.empty()) {
    return line + "; GEMM kernels: " + dnnl.library + " " + dnnl.isa + " (" +
           std::string(to_string(dnnl.vector_isa)) +
           (dnnl.amx    ? ", bf16 on AMX"
            : dnnl.bf16 ? ", bf16 on AVX512-BF16"
                        : ", no bf16") +
           ", from the CPU's features)";
  }
  const GemmKernels& k = cpu_gemm_kernels();
  line += "; GEMM kernels: " + k.library + " " + k.core + " (" +
          (k.isa ? std::string(to_string(*k.isa)) : std::string("ISA unknown")) + ", " +
          k.chosen_by + ")";
  return line;
}

}  // namespace tuner::training
