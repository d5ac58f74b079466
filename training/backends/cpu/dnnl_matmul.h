// Single-threaded matrix products on oneDNN's matmul primitive (libdnnl-dev): kernels that oneDNN
// JIT-compiles for the CPU's own feature bits (AVX-512, AVX2, and AMX or AVX512-BF16 for bf16
// inputs), with no table of CPU models to fall behind. docs/training.md ("Kernels for the CPU at
// hand") has the measurements that chose it over OpenBLAS.
//
// The CPU backend splits every product over its own threads and calls dnnl_gemm from each, so
// oneDNN runs on the calling thread only (its OpenMP thread count is set to 1 there). Each thread
// keeps its own primitives, one per product shape, made at the shape's first call: the steps of
// a training run allocate nothing after the first.
//
// Thread safety: every function may be called from any thread.
#ifndef TUNER_TRAINING_BACKENDS_CPU_DNNL_MATMUL_H_
#define TUNER_TRAINING_BACKENDS_CPU_DNNL_MATMUL_H_

#include <cstdint>
#include <string>

#include "training/backends/cpu/cpu_kernels.h"

namespace tuner::training::cpu {

// What oneDNN's kernels run on here; library empty in a build without oneDNN.
struct DnnlKernels {
  std::string library;  // "oneDNN 2.6.3"
  std::string isa;      // oneDNN's name of the widest ISA it dispatches to: "avx512_core_amx"
  VectorIsa vector_isa = VectorIsa::kSse;  // the vector registers of that ISA
  bool bf16 = false;  // bf16 products in hardware (AVX512-BF16 or AMX), not emulated
  bool amx = false;   // bf16 products on AMX tiles
};
const DnnlKernels& dnnl_kernels();

// c[M,N] = alpha * op(a) * op(b) + beta * c on the calling thread, row-major with leading
// dimensions; a is stored [M,K] (or [K,M] when ta), b [K,N] (or [N,K] when tb).
// REQUIRES: dnnl_kernels().library not empty; m, n, k >= 1.
void dnnl_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// The same with bf16 inputs (bit patterns, as round_to_bf16 writes them) and fp32 accumulation
// and output. REQUIRES: as dnnl_gemm, and dnnl_kernels().bf16.
void dnnl_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                    const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta,
                    float* c, int64_t ldc);

// dst[rows, cols] (packed: leading dimension cols) = src[rows, cols] (leading dimension ld)
// rounded to the nearest bf16, ties to even; NaN stays NaN (quiet), infinities stay infinite.
void round_to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst);

// Empty when this CPU and build can run bf16 products; else why not, e.g. "this CPU (Intel(R)
// Xeon(R) CPU E5-2680 v4) has neither AMX nor AVX512-BF16".
std::string bf16_products_unavailable();

}  // namespace tuner::training::cpu

#endif  // TUNER_TRAINING_BACKENDS_CPU_DNNL_MATMUL_H_
