#include "training/backends/cpu/cpu_kernels.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

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

// Issue 16: Debian's OpenBLAS ran its SSE3 kernels on a CPU with AVX-512 it did not know. The
// kernels the engine runs must be the widest this CPU has, whichever CPU runs the tests.
TEST(CpuKernels, TheChosenKernelsFitThisCpu) {
  const GemmKernels& kernels = cpu_gemm_kernels();
  const VectorIsa cpu = widest_isa(detect_cpu_features());
  ASSERT_TRUE(kernels.isa.has_value()) << kernels.library << " " << kernels.core;
  if (kernels.chosen_by == "OPENBLAS_CORETYPE") GTEST_SKIP() << "OPENBLAS_CORETYPE is set";
  EXPECT_EQ(*kernels.isa, cpu) << describe_cpu_kernels();
}

// The case of issue 16 itself, on whichever CPU runs the tests: OpenBLAS on its SSE3 kernels (as
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

TEST(CpuKernels, TheDescriptionNamesTheCpuAndTheKernels) {
  const std::string line = describe_cpu_kernels();
  EXPECT_NE(line.find("CPU "), std::string::npos) << line;
  EXPECT_NE(line.find("; GEMM kernels: "), std::string::npos) << line;
  EXPECT_NE(line.find(cpu_gemm_kernels().core), std::string::npos) << line;
}

}  // namespace
}  // namespace tuner::training
