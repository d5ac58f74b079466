// bf16 GEMM throughput, step 3 of the GPU check (check.sh): for square sizes, the TFLOP/s of
//   cublas: cuBLAS's own bf16 GEMM (cublasGemmEx on bf16 buffers, fp32 C, CUBLAS_COMPUTE_32F);
//   engine: the CUDA backend in bf16 mode, backend.gemm on fp32 tensors (the rounding of both
//           operands to bf16 included: it is what a training step pays);
// and, for scale, the engine's fp32 GEMM. Each is timed with CUDA events on its stream over
// --reps products after a warm-up, best of three such windows (one for fp32). The engine's
// product is checked against cuBLAS's on the same rounded inputs. One JSON line per size, with
// ratio = engine / cublas.
//
//   gemm_bf16 [--sizes 4096,8192] [--reps 20] [--device 0]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "training/backends/cuda/cuda_backend.h"
#include "training/rng.h"

namespace tuner::training {
namespace {

void check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(e) +
                             " (gemm_bf16.cc:" + std::to_string(line) + ")");
  }
}
void check(cublasStatus_t e, const char* what, int line) {
  if (e != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + " failed: " + cublasGetStatusString(e) +
                             " (gemm_bf16.cc:" + std::to_string(line) + ")");
  }
}
#define CHECK(expr) check((expr), #expr, __LINE__)

struct StreamDeleter {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct CublasDeleter {
  void operator()(cublasHandle_t h) const { cublasDestroy(h); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
struct DeviceDeleter {
  void operator()(void* p) const { cudaFree(p); }
};
using EventPtr = std::unique_ptr<CUevent_st, EventDeleter>;
using DevicePtr = std::unique_ptr<void, DeviceDeleter>;

DevicePtr device_alloc(size_t bytes) {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, bytes));
  return DevicePtr(p);
}

EventPtr new_event() {
  cudaEvent_t e = nullptr;
  CHECK(cudaEventCreate(&e));
  return EventPtr(e);
}

// Round to nearest even, as the engine's __float2bfloat16_rn (the inputs hold no NaN).
uint16_t to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// The best TFLOP/s of `windows` windows of `reps` calls of `product` (one n^3 GEMM each) on
// `stream`, timed with events after `warmup` calls.
double best_tflops(const std::function<void()>& product, cudaStream_t stream, int64_t n, int reps,
                   int windows, int warmup) {
  for (int i = 0; i < warmup; ++i) product();
  CHECK(cudaStreamSynchronize(stream));
  EventPtr start = new_event(), stop = new_event();
  double best = 0;
  for (int w = 0; w < windows; ++w) {
    CHECK(cudaEventRecord(start.get(), stream));
    for (int i = 0; i < reps; ++i) product();
    CHECK(cudaEventRecord(stop.get(), stream));
    CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    best = std::max(best, reps * 2.0 * static_cast<double>(n) * n * n / (ms * 1e-3) / 1e12);
  }
  return best;
}

struct Args {
  std::vector<int64_t> sizes = {4096, 8192};
  int reps = 20;
  int device = 0;
};

void run_size(const Args& args, int64_t n, const std::string& gpu) {
  const size_t count = static_cast<size_t>(n * n);
  Rng rng(static_cast<uint64_t>(n));
  std::vector<float> a(count), b(count);
  for (float& v : a) v = rng.uniform(-1, 1);
  for (float& v : b) v = rng.uniform(-1, 1);

  // (a) cuBLAS on bf16 buffers, row-major c = a b as the engine computes it (c^T = b^T a^T).
  std::vector<float> c_cublas(count);
  double cublas_tflops = 0;
  {
    cudaStream_t s = nullptr;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::unique_ptr<CUstream_st, StreamDeleter> stream(s);
    cublasHandle_t h = nullptr;
    CHECK(cublasCreate(&h));
    std::unique_ptr<cublasContext, CublasDeleter> handle(h);
    CHECK(cublasSetStream(h, s));
    std::vector<uint16_t> host16(count);
    DevicePtr a16 = device_alloc(count * 2), b16 = device_alloc(count * 2);
    DevicePtr c32 = device_alloc(count * 4);
    std::transform(a.begin(), a.end(), host16.begin(), to_bf16);
    CHECK(cudaMemcpy(a16.get(), host16.data(), count * 2, cudaMemcpyHostToDevice));
    std::transform(b.begin(), b.end(), host16.begin(), to_bf16);
    CHECK(cudaMemcpy(b16.get(), host16.data(), count * 2, cudaMemcpyHostToDevice));
    const int in = static_cast<int>(n);
    const float one = 1.0f, zero = 0.0f;
    auto product = [&] {
      CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, in, in, in, &one, b16.get(), CUDA_R_16BF, in,
                         a16.get(), CUDA_R_16BF, in, &zero, c32.get(), CUDA_R_32F, in,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    cublas_tflops = best_tflops(product, s, n, args.reps, 3, 3);
    CHECK(cudaMemcpy(c_cublas.data(), c32.get(), count * 4, cudaMemcpyDeviceToHost));
  }

  // (b) the engine's bf16 path, and its fp32 path for scale.
  auto engine = [&](Precision precision, int windows, std::vector<float>* out) {
    std::unique_ptr<Backend> backend = make_cuda_backend(args.device, {.matmul = precision});
    Tensor ta = backend->allocate(Shape{n, n}), tb = backend->allocate(Shape{n, n});
    Tensor tc = backend->allocate(Shape{n, n});
    backend->upload(a, ta.span());
    backend->upload(b, tb.span());
    auto product = [&] { backend->gemm(Transpose::kNo, Transpose::kNo, 1.0f, ta, tb, 0.0f, tc); };
    auto* stream = static_cast<cudaStream_t>(cuda_stream_of(*backend));
    const double tflops = best_tflops(product, stream, n, args.reps, windows, 3);
    if (out != nullptr) {
      out->resize(count);
      backend->download(tc.span(), *out);
    }
    return tflops;
  };
  std::vector<float> c_engine;
  const double engine_tflops = engine(Precision::kBfloat16, 3, &c_engine);
  const double fp32_tflops = engine(Precision::kFloat32, 1, nullptr);

  double max_diff = 0, max_c = 0;
  for (size_t i = 0; i < count; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(c_engine[i] - c_cublas[i])));
    max_c = std::max(max_c, static_cast<double>(std::fabs(c_cublas[i])));
  }
  std::printf(
      "{\"bench\": \"gemm_bf16\", \"gpu\": \"%s\", \"n\": %lld, \"reps\": %d, "
      "\"cublas_bf16_tflops\": %.1f, \"engine_bf16_tflops\": %.1f, \"ratio\": %.3f, "
      "\"engine_fp32_tflops\": %.1f, \"max_abs_diff_vs_cublas\": %.3g, \"max_abs_c\": %.3g}\n",
      gpu.c_str(), static_cast<long long>(n), args.reps, cublas_tflops, engine_tflops,
      engine_tflops / cublas_tflops, fp32_tflops, max_diff, max_c);
  std::fflush(stdout);
}

int run(const Args& args) {
  const std::string why = cuda_backend_unavailable(args.device);
  if (!why.empty()) {
    std::printf("{\"bench\": \"gemm_bf16\", \"skipped\": \"%s\"}\n", why.c_str());
    return 1;
  }
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, args.device));
  CHECK(cudaSetDevice(args.device));
  for (int64_t n : args.sizes) run_size(args, n, prop.name);
  return 0;
}

std::vector<int64_t> parse_sizes(const std::string& list) {
  std::vector<int64_t> sizes;
  size_t pos = 0;
  while (pos < list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, comma - pos);
    size_t used = 0;
    int64_t n = 0;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || n <= 0 || n > 46340) {
      throw std::invalid_argument("--sizes: '" + item + "' is not a size in [1, 46340]");
    }
    sizes.push_back(n);
    pos = comma + 1;
  }
  return sizes;
}

}  // namespace
}  // namespace tuner::training

int main(int argc, char** argv) {
  tuner::training::Args args;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      const std::string v = argv[++i];
      if (a == "--sizes")
        args.sizes = tuner::training::parse_sizes(v);
      else if (a == "--reps")
        args.reps = std::max(1, std::stoi(v));
      else if (a == "--device")
        args.device = std::stoi(v);
      else
        throw std::invalid_argument("unknown option " + a);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "gemm_bf16: %s\nusage: gemm_bf16 [--sizes 4096,8192] [--reps 20] "
                 "[--device 0]\n",
                 e.what());
    return 2;
  }
  try {
    return tuner::training::run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_bf16: %s\n", e.what());
    return 1;
  }
}
