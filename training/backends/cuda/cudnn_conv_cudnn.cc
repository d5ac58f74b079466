// The CUDA backend's cuDNN convolutions (Convolution::kCudnn), through cuDNN's legacy convolution
// API: cudnnConvolutionForward, cudnnConvolutionBackwardData, cudnnConvolutionBackwardFilter on
// NCHW fp32 tensors. cuDNN 9 marks that API deprecated in favour of its graph API but still ships
// it (its deprecation warnings are off unless CUDNN_WARN_DEPRECATED is defined); the calls it
// removed (cudnnGetConvolutionForwardAlgorithm without _v7 and its preference enums, removed in
// cuDNN 8) are not used.
//
// libcudnn is loaded with dlopen at the first use (api()), not linked: a binary that never
// asks for Convolution::kCudnn runs on a machine without cuDNN (the GPU machines of
// bench/gpu/check.sh may have only PyTorch's copy), and one that asks is told why not.
//
// Bit-reproducibility: the descriptor's math type is CUDNN_FMA_MATH (fp32 FMA kernels only: no
// TF32, whatever NVIDIA_TF32_OVERRIDE says), and each product's algorithm is the first
// deterministic one of cuDNN's heuristics (cudnnGet*Algorithm_v7, a function of the shape and the
// GPU; cudnnFind*, which times the candidates, could pick another one on another run).
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "training/backends/cuda/cuda_backend.h"
#include "training/backends/cuda/cuda_backend_impl.h"
#include "training/backends/cuda/cudnn_conv.h"

// Checks a cudnnStatus_t as TUNER_CUBLAS_CHECK checks cuBLAS's.
#define TUNER_CUDNN_CHECK(expr, op, ARGS)                                                     \
  do {                                                                                        \
    const cudnnStatus_t tuner_cudnn_status_ = (expr);                                         \
    if (tuner_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                                        \
      ::tuner::training::cuda::throw_error(                                                   \
          #expr, ::tuner::training::cuda::api().cudnnGetErrorString(tuner_cudnn_status_), op, \
          ARGS, __FILE__, __LINE__);                                                          \
    }                                                                                         \
  } while (0)

namespace tuner::training {
namespace cuda {
namespace {

// The cuDNN functions this file calls (their prototypes come from cudnn.h).
#define TUNER_CUDNN_FUNCTIONS(X)                        \
  X(cudnnGetVersion)                                    \
  X(cudnnGetErrorString)                                \
  X(cudnnCreate)                                        \
  X(cudnnDestroy)                                       \
  X(cudnnSetStream)                                     \
  X(cudnnCreateTensorDescriptor)                        \
  X(cudnnDestroyTensorDescriptor)                       \
  X(cudnnSetTensor4dDescriptor)                         \
  X(cudnnCreateFilterDescriptor)                        \
  X(cudnnDestroyFilterDescriptor)                       \
  X(cudnnSetFilter4dDescriptor)                         \
  X(cudnnCreateConvolutionDescriptor)                   \
  X(cudnnDestroyConvolutionDescriptor)                  \
  X(cudnnSetConvolution2dDescriptor)                    \
  X(cudnnSetConvolutionMathType)                        \
  X(cudnnGetConvolution2dForwardOutputDim)              \
  X(cudnnGetConvolutionForwardAlgorithmMaxCount)        \
  X(cudnnGetConvolutionForwardAlgorithm_v7)             \
  X(cudnnGetConvolutionForwardWorkspaceSize)            \
  X(cudnnConvolutionForward)                            \
  X(cudnnGetConvolutionBackwardDataAlgorithmMaxCount)   \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)        \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)       \
  X(cudnnConvolutionBackwardData)                       \
  X(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount) \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)      \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize)     \
  X(cudnnConvolutionBackwardFilter)

// The loaded library's entry points. Constant once loaded (the library stays loaded until exit).
struct CudnnApi {
#define TUNER_CUDNN_DECLARE(f) decltype(&::f) f = nullptr;
  TUNER_CUDNN_FUNCTIONS(TUNER_CUDNN_DECLARE)
#undef TUNER_CUDNN_DECLARE
  std::string unavailable;  // empty when every entry point above is set
};

// The library of the major version built against: "libcudnn.so.9".
std::string library_name() { return "libcudnn.so." + std::to_string(CUDNN_MAJOR); }

CudnnApi load_api() {
  CudnnApi a;
  const std::string lib = library_name();
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    a.unavailable = "cannot load " + lib + " (" + (e != nullptr ? e : "not found") +
                    "; put cuDNN " + std::to_string(CUDNN_MAJOR) +
                    "'s libraries on LD_LIBRARY_PATH)";
    return a;
  }
#define TUNER_CUDNN_LOAD(f)                                                               \
  a.f = reinterpret_cast<decltype(&::f)>(dlsym(handle, #f));                              \
  if (a.f == nullptr && a.unavailable.empty()) {                                          \
    a.unavailable = lib + " has no " #f " (a cuDNN without the legacy convolution API?)"; \
  }
  TUNER_CUDNN_FUNCTIONS(TUNER_CUDNN_LOAD)
#undef TUNER_CUDNN_LOAD
  if (!a.unavailable.empty()) return a;
  // cudnnGetVersion() encodes major * 10000 + minor * 100 + patch since cuDNN 9 (major * 1000
  // before), as CUDNN_VERSION does for the headers built against.
  const size_t per_major = CUDNN_MAJOR >= 9 ? 10000 : 1000;
  const size_t loaded = a.cudnnGetVersion();
  if (loaded / per_major != CUDNN_MAJOR) {
    a.unavailable = lib + " is cuDNN " + std::to_string(loaded) + ", built against " +
                    std::to_string(CUDNN_VERSION);
  }
  return a;
}

// Loaded once, at the first call (thread-safe); REQUIRES for calls through it: unavailable empty.
const CudnnApi& api() {
  static const CudnnApi kApi = load_api();
  return kApi;
}

}  // namespace
}  // namespace cuda

std::string cudnn_unavailable(int device) {
  std::string why = cuda_backend_unavailable(device);
  if (!why.empty()) return why;
  return cuda::api().unavailable;
}

namespace cuda {
namespace {

struct HandleDeleter {
  void operator()(cudnnHandle_t h) const { api().cudnnDestroy(h); }
};
struct TensorDescDeleter {
  void operator()(cudnnTensorDescriptor_t d) const { api().cudnnDestroyTensorDescriptor(d); }
};
struct FilterDescDeleter {
  void operator()(cudnnFilterDescriptor_t d) const { api().cudnnDestroyFilterDescriptor(d); }
};
struct ConvDescDeleter {
  void operator()(cudnnConvolutionDescriptor_t d) const {
    api().cudnnDestroyConvolutionDescriptor(d);
  }
};
using HandlePtr = std::unique_ptr<cudnnContext, HandleDeleter>;
using TensorDescPtr = std::unique_ptr<cudnnTensorStruct, TensorDescDeleter>;
using FilterDescPtr = std::unique_ptr<cudnnFilterStruct, FilterDescDeleter>;
using ConvDescPtr = std::unique_ptr<cudnnConvolutionStruct, ConvDescDeleter>;

// Algorithms whose workspace is larger are passed over (the FFT ones can ask for gigabytes).
constexpr size_t kMaxWorkspaceBytes = size_t{256} << 20;

int to_int(int64_t v, const char* op, const char* what) {
  if (v < 0 || v > INT_MAX) {
    throw std::invalid_argument(std::string("cuda backend: ") + op + ": " + what + " = " +
                                std::to_string(v) + " does not fit cuDNN's int");
  }
  return static_cast<int>(v);
}

// One algorithm a product may run, with the workspace it needs.
template <typename Algo>
struct Candidate {
  Algo algo;
  size_t bytes;
};

// One convolution shape (x[B,C,H,W], w[O,C,KH,KW], the window): its descriptors and, per
// product, the algorithms it may run in order of preference. A candidate that cuDNN refuses at
// its first run (CUDNN_STATUS_NOT_SUPPORTED, as the math type can make it) is dropped for good,
// so every later run of the shape takes the same one.
struct Plan {
  TensorDescPtr x, y;
  FilterDescPtr w;
  ConvDescPtr conv;
  std::vector<Candidate<cudnnConvolutionFwdAlgo_t>> forward;
  std::vector<Candidate<cudnnConvolutionBwdDataAlgo_t>> backward_data;
  std::vector<Candidate<cudnnConvolutionBwdFilterAlgo_t>> backward_filter;
};

using PlanKey = std::array<int64_t, 9>;  // B, C, H, W, O, KH, KW, stride, padding

// The algorithms of cuDNN's heuristics that are deterministic and did not ask for tensor-core
// math (the descriptor allows FMA math only), then `fallbacks` (deterministic by cuDNN's
// documentation, for every NCHW fp32 shape), each once, in that order.
template <typename Algo, typename Perf>
std::vector<Algo> preferred(const std::vector<Perf>& perf, int returned,
                            std::initializer_list<Algo> fallbacks) {
  std::vector<Algo> order;
  auto add = [&](Algo a) {
    if (std::find(order.begin(), order.end(), a) == order.end()) order.push_back(a);
  };
  for (int i = 0; i < returned; ++i) {
    const Perf& p = perf[static_cast<size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS || p.determinism != CUDNN_DETERMINISTIC) continue;
    if (p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
      continue;
    }
    add(p.algo);
  }
  for (Algo a : fallbacks) add(a);
  return order;
}

// The data pointers of one cuDNN call, each 16-byte aligned as cuDNN's vectorized kernels may
// want: a tensor at an odd offset (Backend::conv2d_pool_*'s default keeps the convolution's
// output and gradient at float offsets inside its workspace) is copied into aligned scratch
// first, or, for the output, written there and copied out by finish(). Aligned tensors (those of
// allocate() and the parameter arena) are used in place.
class AlignedOperands {
 public:
  static constexpr int kMax = 3;
  // Adds a tensor; returns its index for ptr(). REQUIRES: at most kMax, before stage().
  int add(const Tensor& t, bool output) {
    Entry& e = entries_[count_];
    e = {const_cast<float*>(t.data()), t.numel(), output, -1};
    if (reinterpret_cast<uintptr_t>(e.data) % kAlignBytes != 0) {
      e.offset = bytes_;
      bytes_ +=
          (e.n * static_cast<int64_t>(sizeof(float)) + kAlignBytes - 1) / kAlignBytes * kAlignBytes;
    }
    return count_++;
  }
  // Reserves the scratch and copies the misaligned inputs into it.
  void stage(DeviceBuffer& scratch, cudaStream_t stream, const char* op) {
    if (bytes_ == 0) return;
    base_ = static_cast<char*>(scratch.reserve(static_cast<size_t>(bytes_), stream, op));
    for (int i = 0; i < count_; ++i) {
      const Entry& e = entries_[i];
      if (e.offset < 0 || e.output) continue;
      TUNER_CUDA_CHECK(
          cudaMemcpyAsync(base_ + e.offset, e.data, bytes_of(e), cudaMemcpyDeviceToDevice, stream),
          op, args("staged floats", e.n));
    }
  }
  float* ptr(int i) const {
    const Entry& e = entries_[i];
    return e.offset < 0 ? e.data : reinterpret_cast<float*>(base_ + e.offset);
  }
  // Copies the misaligned outputs back to their tensors.
  void finish(cudaStream_t stream, const char* op) const {
    for (int i = 0; i < count_; ++i) {
      const Entry& e = entries_[i];
      if (e.offset < 0 || !e.output) continue;
      TUNER_CUDA_CHECK(
          cudaMemcpyAsync(e.data, base_ + e.offset, bytes_of(e), cudaMemcpyDeviceToDevice, stream),
          op, args("staged floats", e.n));
    }
  }

 private:
  static constexpr int64_t kAlignBytes = 16;
  struct Entry {
    float* data;
    int64_t n;
    bool output;
    int64_t offset;  // in the scratch, in bytes; -1: used in place
  };
  static size_t bytes_of(const Entry& e) { return static_cast<size_t>(e.n) * sizeof(float); }

  std::array<Entry, kMax> entries_{};
  int count_ = 0;
  int64_t bytes_ = 0;
  char* base_ = nullptr;
};

class CudnnConvolutionsImpl final : public CudnnConvolutions {
 public:
  explicit CudnnConvolutionsImpl(cudaStream_t stream) : stream_(stream) {
    const char* op = "CudaBackend() (cuDNN)";
    cudnnHandle_t h = nullptr;
    TUNER_CUDNN_CHECK(dnn_.cudnnCreate(&h), op, std::string());
    handle_.reset(h);
    TUNER_CUDNN_CHECK(dnn_.cudnnSetStream(h, stream), op, std::string());
  }

  void forward(const Window2d& win, const Tensor& x, const Tensor& w, Tensor& y) override {
    const char* op = "conv2d_forward (cuDNN)";
    if (y.numel() == 0) return;
    Plan& p = plan(win, x.shape(), w.dim(0), op);
    AlignedOperands ops;
    const int ix = ops.add(x, false), iw = ops.add(w, false), iy = ops.add(y, true);
    ops.stage(staging_, stream_, op);
    const float one = 1.0f, zero = 0.0f;
    run(
        p.forward, op, [&] { return args("x", x, "w", w, "y", y); },
        [&](cudnnConvolutionFwdAlgo_t algo, void* ws, size_t bytes) {
          return dnn_.cudnnConvolutionForward(handle_.get(), &one, p.x.get(), ops.ptr(ix),
                                              p.w.get(), ops.ptr(iw), p.conv.get(), algo, ws, bytes,
                                              &zero, p.y.get(), ops.ptr(iy));
        });
    ops.finish(stream_, op);
  }

  void backward_data(const Window2d& win, const Tensor& w, const Tensor& dy, Tensor& dx) override {
    const char* op = "conv2d_backward (cuDNN data)";
    if (dx.numel() == 0) return;
    if (dy.numel() == 0) {
      zero(dx, op);
      return;
    }
    Plan& p = plan(win, dx.shape(), w.dim(0), op);
    AlignedOperands ops;
    const int iw = ops.add(w, false), idy = ops.add(dy, false), idx = ops.add(dx, true);
    ops.stage(staging_, stream_, op);
    const float one = 1.0f, zero_f = 0.0f;
    run(
        p.backward_data, op, [&] { return args("w", w, "dy", dy, "dx", dx); },
        [&](cudnnConvolutionBwdDataAlgo_t algo, void* ws, size_t bytes) {
          return dnn_.cudnnConvolutionBackwardData(handle_.get(), &one, p.w.get(), ops.ptr(iw),
                                                   p.y.get(), ops.ptr(idy), p.conv.get(), algo, ws,
                                                   bytes, &zero_f, p.x.get(), ops.ptr(idx));
        });
    ops.finish(stream_, op);
  }

  void backward_filter(const Window2d& win, const Tensor& x, const Tensor& dy,
                       Tensor& dw) override {
    const char* op = "conv2d_backward (cuDNN filter)";
    if (dw.numel() == 0) return;
    if (dy.numel() == 0) {  // an empty batch: the sum over no sample
      zero(dw, op);
      return;
    }
    Plan& p = plan(win, x.shape(), dw.dim(0), op);
    AlignedOperands ops;
    const int ix = ops.add(x, false), idy = ops.add(dy, false), idw = ops.add(dw, true);
    ops.stage(staging_, stream_, op);
    const float one = 1.0f, zero_f = 0.0f;
    run(
        p.backward_filter, op, [&] { return args("x", x, "dy", dy, "dw", dw); },
        [&](cudnnConvolutionBwdFilterAlgo_t algo, void* ws, size_t bytes) {
          return dnn_.cudnnConvolutionBackwardFilter(handle_.get(), &one, p.x.get(), ops.ptr(ix),
                                                     p.y.get(), ops.ptr(idy), p.conv.get(), algo,
                                                     ws, bytes, &zero_f, p.w.get(), ops.ptr(idw));
        });
    ops.finish(stream_, op);
  }

 private:
  void zero(Tensor& t, const char* op) {
    TUNER_CUDA_CHECK(
        cudaMemsetAsync(t.data(), 0, static_cast<size_t>(t.numel()) * sizeof(float), stream_), op,
        args("t", t));
  }

  // Runs `call` with the first candidate cuDNN does not refuse as unsupported, in a workspace
  // of its size; `shapes` builds the error message's arguments.
  template <typename Algo, typename Shapes, typename Call>
  void run(std::vector<Candidate<Algo>>& candidates, const char* op, const Shapes& shapes,
           const Call& call) {
    for (;;) {
      const Candidate<Algo> c = candidates.front();
      // Grows only while the shapes of the first step are new (it waits for the stream then).
      void* ws = c.bytes > 0 ? workspace_.reserve(c.bytes, stream_, op) : nullptr;
      const cudnnStatus_t status = call(c.algo, ws, c.bytes);
      if (status == CUDNN_STATUS_NOT_SUPPORTED && candidates.size() > 1) {
        candidates.erase(candidates.begin());
        continue;
      }
      TUNER_CUDNN_CHECK(status, op,
                        shapes() + args("algo", static_cast<int64_t>(c.algo), "workspace",
                                        static_cast<int64_t>(c.bytes)));
      return;
    }
  }

  // The plan of a shape, made at its first use. REQUIRES: the window fits x (OH, OW >= 1).
  Plan& plan(const Window2d& win, const Shape& x, int64_t out_channels, const char* op) {
    const PlanKey key = {x[0],         x[1],         x[2],       x[3],       out_channels,
                         win.kernel_h, win.kernel_w, win.stride, win.padding};
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    Plan p = make_plan(win, x, out_channels, op);
    return plans_.emplace(key, std::move(p)).first->second;
  }

  Plan make_plan(const Window2d& win, const Shape& xs, int64_t out_channels, const char* op) {
    const int64_t oh = win.out_h(xs[2]), ow = win.out_w(xs[3]);
    auto shapes = [&] {
      return args("x", xs[0], "c", xs[1], "h", xs[2], "w", xs[3], "o", out_channels, "kh",
                  win.kernel_h, "kw", win.kernel_w, "stride", win.stride, "padding", win.padding);
    };
    const int b = to_int(xs[0], op, "batch"), c = to_int(xs[1], op, "channels");
    const int h = to_int(xs[2], op, "height"), w = to_int(xs[3], op, "width");
    const int o = to_int(out_channels, op, "out channels");
    const int kh = to_int(win.kernel_h, op, "kernel height");
    const int kw = to_int(win.kernel_w, op, "kernel width");
    const int stride = to_int(win.stride, op, "stride");
    const int pad = to_int(win.padding, op, "padding");
    const int ioh = to_int(oh, op, "output height"), iow = to_int(ow, op, "output width");

    Plan p;
    cudnnTensorDescriptor_t td = nullptr;
    TUNER_CUDNN_CHECK(dnn_.cudnnCreateTensorDescriptor(&td), op, shapes());
    p.x.reset(td);
    TUNER_CUDNN_CHECK(dnn_.cudnnCreateTensorDescriptor(&td), op, shapes());
    p.y.reset(td);
    cudnnFilterDescriptor_t fd = nullptr;
    TUNER_CUDNN_CHECK(dnn_.cudnnCreateFilterDescriptor(&fd), op, shapes());
    p.w.reset(fd);
    cudnnConvolutionDescriptor_t cd = nullptr;
    TUNER_CUDNN_CHECK(dnn_.cudnnCreateConvolutionDescriptor(&cd), op, shapes());
    p.conv.reset(cd);

    // Contiguous NCHW float32 everywhere; the weights [O,C,KH,KW] are a KCRS filter.
    TUNER_CUDNN_CHECK(
        dnn_.cudnnSetTensor4dDescriptor(p.x.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, b, c, h, w),
        op, shapes());
    TUNER_CUDNN_CHECK(dnn_.cudnnSetTensor4dDescriptor(p.y.get(), CUDNN_TENSOR_NCHW,
                                                      CUDNN_DATA_FLOAT, b, o, ioh, iow),
                      op, shapes());
    TUNER_CUDNN_CHECK(dnn_.cudnnSetFilter4dDescriptor(p.w.get(), CUDNN_DATA_FLOAT,
                                                      CUDNN_TENSOR_NCHW, o, c, kh, kw),
                      op, shapes());
    // Cross-correlation (no kernel flip), as im2col + GEMM and the CPU compute it; fp32
    // accumulation on FMA kernels only.
    TUNER_CUDNN_CHECK(
        dnn_.cudnnSetConvolution2dDescriptor(p.conv.get(), pad, pad, stride, stride, 1, 1,
                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        op, shapes());
    TUNER_CUDNN_CHECK(dnn_.cudnnSetConvolutionMathType(p.conv.get(), CUDNN_FMA_MATH), op, shapes());

    // cuDNN's idea of the output extent must be the Window2d's (a descriptor mistake would
    // show here, not as wrong numbers).
    int n_out = 0, c_out = 0, h_out = 0, w_out = 0;
    TUNER_CUDNN_CHECK(dnn_.cudnnGetConvolution2dForwardOutputDim(p.conv.get(), p.x.get(), p.w.get(),
                                                                 &n_out, &c_out, &h_out, &w_out),
                      op, shapes());
    if (n_out != b || c_out != o || h_out != ioh || w_out != iow) {
      throw std::logic_error(std::string("cuda backend: ") + op + ": cuDNN's output [" +
                             std::to_string(n_out) + ", " + std::to_string(c_out) + ", " +
                             std::to_string(h_out) + ", " + std::to_string(w_out) +
                             "] is not the window's for" + shapes());
    }

    cudnnHandle_t hd = handle_.get();
    {
      int count = 0, returned = 0;
      TUNER_CUDNN_CHECK(dnn_.cudnnGetConvolutionForwardAlgorithmMaxCount(hd, &count), op, shapes());
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(count, 1)));
      TUNER_CUDNN_CHECK(
          dnn_.cudnnGetConvolutionForwardAlgorithm_v7(hd, p.x.get(), p.w.get(), p.conv.get(),
                                                      p.y.get(), count, &returned, perf.data()),
          op, shapes());
      for (cudnnConvolutionFwdAlgo_t a :
           preferred(perf, returned,
                     {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM})) {
        size_t bytes = 0;
        if (dnn_.cudnnGetConvolutionForwardWorkspaceSize(hd, p.x.get(), p.w.get(), p.conv.get(),
                                                         p.y.get(), a,
                                                         &bytes) == CUDNN_STATUS_SUCCESS &&
            bytes <= kMaxWorkspaceBytes) {
          p.forward.push_back({a, bytes});
        }
      }
    }
    {
      int count = 0, returned = 0;
      TUNER_CUDNN_CHECK(dnn_.cudnnGetConvolutionBackwardDataAlgorithmMaxCount(hd, &count), op,
                        shapes());
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(std::max(count, 1)));
      TUNER_CUDNN_CHECK(
          dnn_.cudnnGetConvolutionBackwardDataAlgorithm_v7(
              hd, p.w.get(), p.y.get(), p.conv.get(), p.x.get(), count, &returned, perf.data()),
          op, shapes());
      for (cudnnConvolutionBwdDataAlgo_t a :
           preferred(perf, returned, {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1})) {
        if (a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) continue;  // atomics: not deterministic
        size_t bytes = 0;
        if (dnn_.cudnnGetConvolutionBackwardDataWorkspaceSize(hd, p.w.get(), p.y.get(),
                                                              p.conv.get(), p.x.get(), a,
                                                              &bytes) == CUDNN_STATUS_SUCCESS &&
            bytes <= kMaxWorkspaceBytes) {
          p.backward_data.push_back({a, bytes});
        }
      }
    }
    {
      int count = 0, returned = 0;
      TUNER_CUDNN_CHECK(dnn_.cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(hd, &count), op,
                        shapes());
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(
          static_cast<size_t>(std::max(count, 1)));
      TUNER_CUDNN_CHECK(
          dnn_.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
              hd, p.x.get(), p.y.get(), p.conv.get(), p.w.get(), count, &returned, perf.data()),
          op, shapes());
      for (cudnnConvolutionBwdFilterAlgo_t a :
           preferred(perf, returned, {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1})) {
        // ALGO_0 and ALGO_3 sum with atomics: not deterministic.
        if (a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3) {
          continue;
        }
        size_t bytes = 0;
        if (dnn_.cudnnGetConvolutionBackwardFilterWorkspaceSize(hd, p.x.get(), p.y.get(),
                                                                p.conv.get(), p.w.get(), a,
                                                                &bytes) == CUDNN_STATUS_SUCCESS &&
            bytes <= kMaxWorkspaceBytes) {
          p.backward_filter.push_back({a, bytes});
        }
      }
    }
    if (p.forward.empty() || p.backward_data.empty() || p.backward_filter.empty()) {
      throw CudaError(std::string("cuda backend: ") + op +
                      ": cuDNN offers no deterministic fp32 algorithm within " +
                      std::to_string(kMaxWorkspaceBytes >> 20) + " MiB of workspace for" +
                      shapes() + " (forward " + std::to_string(p.forward.size()) +
                      ", backward data " + std::to_string(p.backward_data.size()) +
                      ", backward filter " + std::to_string(p.backward_filter.size()) +
                      "); use Convolution::kGemm");
    }
    return p;
  }

  // Constant after construction.
  const CudnnApi& dnn_ = api();
  cudaStream_t stream_;
  HandlePtr handle_;

  // State below is used by one op at a time.
  std::map<PlanKey, Plan> plans_;
  DeviceBuffer workspace_;  // cuDNN's workspace, of the largest candidate run so far
  DeviceBuffer staging_;    // AlignedOperands' copies of misaligned tensors
};

}  // namespace

std::unique_ptr<CudnnConvolutions> make_cudnn_convolutions(int /*device*/, cudaStream_t stream) {
  return std::make_unique<CudnnConvolutionsImpl>(stream);
}

}  // namespace cuda
}  // namespace tuner::training
