// oneDNN's matmul primitive behind dnnl_matmul.h: one cache of primitives per calling thread.
#include "training/backends/cpu/dnnl_matmul.h"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#ifdef TUNER_HAVE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace tuner::training::cpu {
namespace {

uint16_t bf16_bits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

#ifdef TUNER_HAVE_DNNL

// oneDNN's ISA values are bit sets: each includes the bits of the ISAs it extends.
bool has_isa(dnnl_cpu_isa_t isa, dnnl_cpu_isa_t part) { return (isa & part) == part; }

std::string isa_name(dnnl_cpu_isa_t isa) {
  if (has_isa(isa, dnnl_cpu_isa_avx512_core_amx)) return "avx512_core_amx";
  if (has_isa(isa, dnnl_cpu_isa_avx512_core_bf16)) return "avx512_core_bf16";
  if (has_isa(isa, dnnl_cpu_isa_avx512_core_vnni)) return "avx512_core_vnni";
  if (has_isa(isa, dnnl_cpu_isa_avx512_core)) return "avx512_core";
  if (has_isa(isa, dnnl_cpu_isa_avx2_vnni)) return "avx2_vnni";
  if (has_isa(isa, dnnl_cpu_isa_avx2)) return "avx2";
  if (has_isa(isa, dnnl_cpu_isa_avx)) return "avx";
  return "sse41";
}

DnnlKernels find_dnnl_kernels() {
  DnnlKernels k;
  const dnnl_version_t* v = dnnl_version();
  k.library = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
              std::to_string(v->patch);
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  k.isa = isa_name(isa);
  k.vector_isa = has_isa(isa, dnnl_cpu_isa_avx512_core) ? VectorIsa::kAvx512
                 : has_isa(isa, dnnl_cpu_isa_avx2)      ? VectorIsa::kAvx2
                 : has_isa(isa, dnnl_cpu_isa_avx)       ? VectorIsa::kAvx
                                                        : VectorIsa::kSse;
  k.bf16 =
      has_isa(isa, dnnl_cpu_isa_avx512_core_bf16) || has_isa(isa, dnnl_cpu_isa_avx512_core_amx);
  k.amx = has_isa(isa, dnnl_cpu_isa_avx512_core_amx);
  return k;
}

// What makes two products the same primitive.
struct ProductKey {
  bool bf16, ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  uint32_t alpha, beta;  // bit patterns
  bool operator==(const ProductKey&) const = default;
};

struct ProductKeyHash {
  size_t operator()(const ProductKey& key) const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    const auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull + (h >> 29); };
    mix(static_cast<uint64_t>(key.bf16) | static_cast<uint64_t>(key.ta) << 1 |
        static_cast<uint64_t>(key.tb) << 2);
    for (int64_t v : {key.m, key.n, key.k, key.lda, key.ldb, key.ldc}) {
      mix(static_cast<uint64_t>(v));
    }
    mix(static_cast<uint64_t>(key.alpha) << 32 | key.beta);
    return static_cast<size_t>(h);
  }
};

struct Product {
  dnnl::matmul primitive;
  dnnl::memory a, b, c;  // descriptors made once; their data handles are set per call
};

// A product's operand [rows, cols] as oneDNN sees it (src [M,K], weights [K,N]), stored
// row-major with leading dimension ld, or transposed ([cols, rows] with leading dimension ld).
dnnl::memory::desc operand(int64_t rows, int64_t cols, int64_t ld, bool transposed,
                           dnnl::memory::data_type type) {
  return dnnl::memory::desc({rows, cols}, type,
                            transposed ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1});
}

// Too many shapes seen by one thread (eval batches of every size, say): start over rather than
// grow without bound. A training run has a few dozen.
constexpr size_t kMaxProductsPerThread = 512;

class ThreadProducts {
 public:
  ThreadProducts() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    // The backend's own threads split the work: oneDNN must not start a team of its own here.
    omp_set_num_threads(1);
  }

  void run(const ProductKey& key, const void* a, const void* b, float* c) {
    auto it = products_.find(key);
    if (it == products_.end()) {
      if (products_.size() >= kMaxProductsPerThread) products_.clear();
      it = products_.emplace(key, make(key)).first;
    }
    Product& p = it->second;
    p.a.set_data_handle(const_cast<void*>(a));
    p.b.set_data_handle(const_cast<void*>(b));
    p.c.set_data_handle(c);
    p.primitive.execute(stream_,
                        {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}});
  }

 private:
  Product make(const ProductKey& key) {
    using dt = dnnl::memory::data_type;
    const dt in = key.bf16 ? dt::bf16 : dt::f32;
    const auto a = operand(key.m, key.k, key.lda, key.ta, in);
    const auto b = operand(key.k, key.n, key.ldb, key.tb, in);
    const auto c = operand(key.m, key.n, key.ldc, false, dt::f32);
    dnnl::primitive_attr attr;
    const float alpha = std::bit_cast<float>(key.alpha), beta = std::bit_cast<float>(key.beta);
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine_);
    return Product{dnnl::matmul(pd), dnnl::memory(a, engine_, DNNL_MEMORY_NONE),
                   dnnl::memory(b, engine_, DNNL_MEMORY_NONE),
                   dnnl::memory(c, engine_, DNNL_MEMORY_NONE)};
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::unordered_map<ProductKey, Product, ProductKeyHash> products_;
};

void run_product(const ProductKey& key, const void* a, const void* b, float* c) {
  thread_local ThreadProducts products;
  try {
    products.run(key, a, b, c);
  } catch (const dnnl::error& e) {
    // The backend's threads cannot carry an exception out; a product oneDNN refuses is a defect
    // (the backend checked bf16 support when it was made).
    std::fprintf(
        stderr,
        "tuner: oneDNN refused a %s product [%lld x %lld] x [%lld x %lld]: %s (status %d)\n",
        key.bf16 ? "bf16" : "fp32", static_cast<long long>(key.m), static_cast<long long>(key.k),
        static_cast<long long>(key.k), static_cast<long long>(key.n), e.what(),
        static_cast<int>(e.status));
    std::abort();
  }
}

#endif

}  // namespace

const DnnlKernels& dnnl_kernels() {
#ifdef TUNER_HAVE_DNNL
  static const DnnlKernels kernels = find_dnnl_kernels();
#else
  static const DnnlKernels kernels;
#endif
  return kernels;
}

#ifdef TUNER_HAVE_DNNL
void dnnl_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  run_product({false, ta, tb, m, n, k, lda, ldb, ldc, std::bit_cast<uint32_t>(alpha),
               std::bit_cast<uint32_t>(beta)},
              a, b, c);
}

void dnnl_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                    const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta,
                    float* c, int64_t ldc) {
  run_product({true, ta, tb, m, n, k, lda, ldb, ldc, std::bit_cast<uint32_t>(alpha),
               std::bit_cast<uint32_t>(beta)},
              a, b, c);
}
#else
// Never called: without oneDNN, dnnl_kernels().library is empty and the backend uses OpenBLAS.
void dnnl_gemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
               int64_t, float, float*, int64_t) {
  std::fprintf(stderr, "tuner: dnnl_gemm called in a build without oneDNN\n");
  std::abort();
}

void dnnl_gemm_bf16(bool, bool, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t,
                    const uint16_t*, int64_t, float, float*, int64_t) {
  std::fprintf(stderr, "tuner: dnnl_gemm_bf16 called in a build without oneDNN\n");
  std::abort();
}
#endif

void round_to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = src + r * ld;
    uint16_t* out = dst + r * cols;
    for (int64_t j = 0; j < cols; ++j) out[j] = bf16_bits(in[j]);
  }
}

std::string bf16_products_unavailable() {
  const DnnlKernels& k = dnnl_kernels();
  if (k.library.empty()) {
    return "this build has no oneDNN (install libdnnl-dev and rebuild), which the CPU backend's "
           "bf16 products run on";
  }
  if (k.bf16) return "";
  const CpuFeatures cpu = detect_cpu_features();
  if (cpu.avx512_bf16 || (cpu.amx_tile && cpu.amx_bf16)) {
    return k.library + " is limited to " + k.isa +
           " here (ONEDNN_MAX_CPU_ISA is set?), which has no bf16 instructions";
  }
  return "this CPU (" + cpu.model_name + ") has neither AMX nor AVX512-BF16";
}

}  // namespace tuner::training::cpu
