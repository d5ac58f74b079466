#include "training/backends/cpu/cpu_kernels.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "training/backends/cpu/dnnl_matmul.h"

namespace tuner::training {
namespace {

CpuFeatures avx2_cpu() {
  CpuFeatures cpu;
  cpu.avx = cpu.avx2 = cpu.fma = true;
  return cpu;
}

CpuFeatures avx512_cpu() {
  CpuFeatures cpu = avx2_cpu();
  cpu.avx512f = cpu.avx512bw = cpu.avx512dq = cpu.avx512vl = true;
  return cpu;
}

TEST(CpuKernels, TheWidestIsaNeedsEveryFeatureItsKernelsUse) {
  EXPECT_EQ(widest_isa(CpuFeatures{}), VectorIsa::kSse);
  CpuFeatures avx_only;
  avx_only.avx = true;
  EXPECT_EQ(widest_isa(avx_only), VectorIsa::kAvx);
  CpuFeatures avx2_without_fma = avx2_cpu();
  avx2_without_fma.fma = false;
  EXPECT_EQ(widest_isa(avx2_without_fma), VectorIsa::kAvx);
  EXPECT_EQ(widest_isa(avx2_cpu()), VectorIsa::kAvx2);  // a Zen 3
  CpuFeatures knights = avx512_cpu();  // AVX-512F without BW/VL: not what SkylakeX kernels use
  knights.avx512bw = knights.avx512vl = false;
  EXPECT_EQ(widest_isa(knights), VectorIsa::kAvx2);
  EXPECT_EQ(widest_isa(avx512_cpu()), VectorIsa::kAvx512);
}

TEST(CpuKernels, OpenBlasCoresForEachIsaRunThatIsa) {
  CpuFeatures bf16 = avx512_cpu();
  bf16.avx512_bf16 = true;
  for (const CpuFeatures& cpu : {CpuFeatures{}, avx2_cpu(), avx512_cpu(), bf16}) {
    for (VectorIsa isa : {VectorIsa::kSse, VectorIsa::kAvx, VectorIsa::kAvx2, VectorIsa::kAvx512}) {
      EXPECT_EQ(openblas_core_isa(openblas_core_for(isa, cpu)), isa) << to_string(isa);
    }
  }
  EXPECT_EQ(openblas_core_for(VectorIsa::kAvx512, bf16), "Cooperlake");
  EXPECT_EQ(openblas_core_isa("Prescott"), VectorIsa::kSse);  // what 0.3.21 gives unknown CPUs
  EXPECT_EQ(openblas_core_isa("ZEN"), VectorIsa::kAvx2);
  EXPECT_EQ(openblas_core_isa("Itanium"), std::nullopt);
}

// Regression: Debian's OpenBLAS ran its SSE3 kernels on a CPU with AVX-512 it did not know. The
// kernels the engine runs must be the widest this CPU has, whichever CPU runs the tests.
TEST(CpuKernels, TheChosenKernelsFitThisCpu) {
  const GemmKernels& kernels = cpu_gemm_kernels();
  const VectorIsa cpu = widest_isa(detect_cpu_features());
  ASSERT_TRUE(kernels.isa.has_value()) << kernels.library << " " << kernels.core;
  if (kernels.chosen_by == "OPENBLAS_CORETYPE") GTEST_SKIP() << "OPENBLAS_CORETYPE is set";
  EXPECT_EQ(*kernels.isa, cpu) << describe_cpu_kernels();
}

// That defect itself, on whichever CPU runs the tests: OpenBLAS on its SSE3 kernels (as
// on a CPU its table does not know) gets this CPU's widest instead. In a child process, so that
// this one keeps its kernels.
TEST(CpuKernelsDeathTest, KernelsThatDoNotFitAreReplacedByTheCpusWidest) {
  const VectorIsa cpu = widest_isa(detect_cpu_features());
  if (cpu == VectorIsa::kSse) GTEST_SKIP() << "an SSE-only CPU: SSE3 kernels fit it";
  if (cpu_gemm_kernels().library == "Eigen") GTEST_SKIP() << "a build without OpenBLAS";
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) GTEST_SKIP() << "OPENBLAS_CORETYPE is set";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!load_openblas_core("Prescott")) std::_Exit(2);
        const GemmKernels k = choose_gemm_kernels();
        std::fprintf(stderr, "chosen: %s %s (%s)\n", k.core.c_str(),
                     k.isa ? std::string(to_string(*k.isa)).c_str() : "?", k.chosen_by.c_str());
        std::_Exit(k.isa == cpu ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "chosen: .* \\(from the CPU's features\\)");
}

// The same for oneDNN, whose kernels the engine's products run on where the build has it: its
// widest ISA must be this CPU's, bf16 in hardware exactly where the CPU has AMX or AVX512-BF16.
TEST(CpuKernels, OneDnnKernelsFitThisCpu) {
  const cpu::DnnlKernels& dnnl = cpu::dnnl_kernels();
  if (dnnl.library.empty()) GTEST_SKIP() << "a build without oneDNN";
  if (std::getenv("ONEDNN_MAX_CPU_ISA") != nullptr || std::getenv("DNNL_MAX_CPU_ISA") != nullptr) {
    GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA is set";
  }
  const CpuFeatures cpu = detect_cpu_features();
  EXPECT_EQ(dnnl.vector_isa, widest_isa(cpu)) << describe_cpu_kernels();
  const bool amx = cpu.amx_tile && cpu.amx_bf16;
  EXPECT_EQ(dnnl.amx, amx) << describe_cpu_kernels();
  EXPECT_EQ(dnnl.bf16, amx || cpu.avx512_bf16) << describe_cpu_kernels();
  EXPECT_EQ(cpu::bf16_products_unavailable().empty(), dnnl.bf16);
}

TEST(CpuKernels, TheDescriptionNamesTheCpuAndTheKernels) {
  const std::string line = describe_cpu_kernels();
  EXPECT_NE(line.find("CPU "), std::string::npos) << line;
  EXPECT_NE(line.find("; GEMM kernels: "), std::string::npos) << line;
  const cpu::DnnlKernels& dnnl = cpu::dnnl_kernels();
  const std::string kernels = dnnl.library.empty()
                                  ? cpu_gemm_kernels().library + " " + cpu_gemm_kernels().core
                                  : dnnl.library + " " + dnnl.isa;
  EXPECT_NE(line.find(kernels), std::string::npos) << line;
}

// Rounding to bf16 keeps the 8 leading significant bits, to nearest with ties to even, and keeps
// NaN a NaN and infinities infinite.
TEST(CpuKernels, RoundToBf16IsToNearestEven) {
  const float u = std::ldexp(1.0f, -8);  // half the bf16 spacing above 1
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> in = {
      1 + u, 1 + 3 * u, 1 + 1.5f * u, -(1 + 0.5f * u), inf,
      -inf,  nan,       0.0f,         -0.0f,           std::numeric_limits<float>::max()};
  std::vector<uint16_t> out(in.size());
  cpu::round_to_bf16(in.data(), 1, static_cast<int64_t>(in.size()), 0, out.data());
  const auto value = [](uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); };
  EXPECT_EQ(value(out[0]), 1.0f);       // a tie, to the even 1
  EXPECT_EQ(value(out[1]), 1 + 4 * u);  // a tie, to the even 1 + 2^-6
  EXPECT_EQ(value(out[2]), 1 + 2 * u);  // above the tie
  EXPECT_EQ(value(out[3]), -1.0f);      // below it
  EXPECT_EQ(value(out[4]), inf);
  EXPECT_EQ(value(out[5]), -inf);
  EXPECT_TRUE(std::isnan(value(out[6])));
  EXPECT_EQ(out[7], 0x0000);
  EXPECT_EQ(out[8], 0x8000);
  EXPECT_TRUE(std::isinf(value(out[9])));  // past bf16's largest finite value, rounds up
  // Rows with a leading dimension are packed.
  const std::vector<float> m = {1, 2, -7, 3, 4, -7};
  std::vector<uint16_t> packed(4);
  cpu::round_to_bf16(m.data(), 2, 2, 3, packed.data());
  EXPECT_EQ(value(packed[1]), 2.0f);
  EXPECT_EQ(value(packed[2]), 3.0f);
}

}  // namespace
}  // namespace tuner::training
