// The CUDA backend: construction, memory, element-wise ops, losses and optimizer steps (the
// products are in cuda_gemm_cuda.cc, cuDNN's convolutions in cudnn_conv_cudnn.cc, pooling and
// normalization in cuda_pool_norm_cuda.cc).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "training/backends/cuda/cuda_backend.h"
#include "training/backends/cuda/cuda_backend_impl.h"
#include "training/backends/cuda/cudnn_conv.h"
#include "training/rng.h"

namespace tuner::training {

static_assert(static_cast<int>(Activation::kNone) == cuda::kActNone &&
                  static_cast<int>(Activation::kRelu) == cuda::kActRelu &&
                  static_cast<int>(Activation::kGelu) == cuda::kActGelu &&
                  static_cast<int>(Activation::kTanh) == cuda::kActTanh &&
                  static_cast<int>(Activation::kSigmoid) == cuda::kActSigmoid,
              "cuda::ActCode must mirror Activation");

namespace cuda {

void throw_error(const char* call, const char* error, std::string_view op, const std::string& args,
                 const char* file, int line) {
  std::string msg = "cuda backend: ";
  msg += op;
  msg += '(';
  msg += args.empty() ? args : args.substr(1);  // drop the leading space
  msg += "): ";
  msg += call;
  msg += " failed: ";
  msg += error != nullptr ? error : "unknown error";
  msg += " (";
  msg += file;
  msg += ':';
  msg += std::to_string(line);
  msg += ')';
  throw CudaError(msg);
}

void* DeviceBuffer::reserve(size_t bytes, cudaStream_t stream, std::string_view op) {
  if (bytes <= bytes_) return data_;
  // Kernels queued earlier may still read the old block.
  TUNER_CUDA_CHECK(cudaStreamSynchronize(stream), op, args("bytes", static_cast<int64_t>(bytes)));
  const size_t want = std::max<size_t>(bytes, 2 * bytes_);
  cudaFree(data_);
  data_ = nullptr;
  bytes_ = 0;
  TUNER_CUDA_CHECK(cudaMalloc(&data_, want), op, args("bytes", static_cast<int64_t>(want)));
  bytes_ = want;
  return data_;
}

void* PinnedBuffer::reserve(size_t bytes, std::string_view op) {
  if (bytes <= bytes_) return data_;
  cudaFreeHost(data_);
  data_ = nullptr;
  bytes_ = 0;
  // Round up to a power of two (at least 64 KiB) so a growing batch does not reallocate often.
  size_t want = size_t{1} << 16;
  while (want < bytes) want <<= 1;
  TUNER_CUDA_CHECK(cudaMallocHost(&data_, want), op, args("bytes", static_cast<int64_t>(want)));
  bytes_ = want;
  return data_;
}

namespace {

// The release function of allocate()'s tensors (Tensor::adopt takes a plain function). Errors
// are ignored: it runs in destructors, possibly after the runtime has shut down at exit.
void release_device_memory(float* p) { cudaFree(p); }

// Bytes per pinned staging chunk: large uploads are copied in chunks through the two buffers.
constexpr size_t kStagingChunkBytes = size_t{8} << 20;

int64_t count(std::span<const float> s) { return static_cast<int64_t>(s.size()); }

}  // namespace
}  // namespace cuda

std::string cuda_backend_unavailable(int device) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky status so later calls see a clean slate
    return std::string("no CUDA device: ") + cudaGetErrorString(e);
  }
  if (device < 0 || device >= n) {
    return "device " + std::to_string(device) + " of " + std::to_string(n);
  }
  return "";
}

std::unique_ptr<Backend> make_cuda_backend(int device, CudaBackendOptions options) {
  const std::string invalid = cuda_options_invalid(options);
  if (!invalid.empty()) throw std::invalid_argument("make_cuda_backend: " + invalid);
  const std::string reason = options.convolution == Convolution::kCudnn
                                 ? cudnn_unavailable(device)
                                 : cuda_backend_unavailable(device);
  if (!reason.empty()) throw std::runtime_error("make_cuda_backend: " + reason);
  return std::make_unique<CudaBackend>(device, options);
}

void* cuda_stream_of(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  return cuda != nullptr ? static_cast<void*>(cuda->stream()) : nullptr;
}

CudaBackend::CudaBackend(int device, CudaBackendOptions options)
    : device_(device), options_(options) {
  const char* op = "CudaBackend()";
  TUNER_CUDA_CHECK(cudaSetDevice(device_), op, cuda::args("device", int64_t{device}));
  cudaStream_t stream = nullptr;
  TUNER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), op, std::string());
  stream_.reset(stream);
  cublasHandle_t handle = nullptr;
  TUNER_CUBLAS_CHECK(cublasCreate(&handle), op, std::string());
  cublas_.reset(handle);
  TUNER_CUBLAS_CHECK(cublasSetStream(handle, stream), op, std::string());
  // Full fp32 products (no TF32), so results match the CPU backend to float tolerance. The bf16
  // products (gemm_rows_bf16) use the tensor cores in this mode too: their inputs are bf16.
  TUNER_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), op, std::string());
  if (options_.convolution == Convolution::kCudnn) {
    cudnn_ = cuda::make_cudnn_convolutions(device_, stream);
  }
  for (Staging& st : staging_) {
    cudaEvent_t ev = nullptr;
    TUNER_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), op, std::string());
    st.copied.reset(ev);
  }
  const size_t reduce_bytes = (cuda::kMaxReduceBlocks + 1) * sizeof(double) + sizeof(double);
  void* r = reduce_.reserve(reduce_bytes, stream, op);
  // The block counter must start at zero; the last block of each reduction resets it.
  TUNER_CUDA_CHECK(cudaMemsetAsync(r, 0, reduce_bytes, stream), op, std::string());
  result_host_.reserve(sizeof(double), op);
  TUNER_CUDA_CHECK(cudaStreamSynchronize(stream), op, std::string());
}

CudaBackend::~CudaBackend() {
  // Let queued work finish before the scratch it uses is freed; errors cannot be reported here.
  if (stream_) cudaStreamSynchronize(stream_.get());
}

cuda::ReduceScratch CudaBackend::reduce_scratch() const {
  auto* base = static_cast<double*>(reduce_.data());
  return {base, reinterpret_cast<unsigned int*>(base + cuda::kMaxReduceBlocks + 1),
          base + cuda::kMaxReduceBlocks};
}

double CudaBackend::read_result(const char* op) {
  auto* host = static_cast<double*>(result_host_.data());
  TUNER_CUDA_CHECK(cudaMemcpyAsync(host, reduce_scratch().result, sizeof(double),
                                   cudaMemcpyDeviceToHost, stream_.get()),
                   op, std::string());
  TUNER_CUDA_CHECK(cudaStreamSynchronize(stream_.get()), op, std::string());
  return *host;
}

// ---- Memory ----

Tensor CudaBackend::allocate(const Shape& shape) {
  // At least one float, so that even an empty tensor has a distinct non-null address.
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(shape.numel(), 1)) * sizeof(float);
  void* p = nullptr;
  TUNER_CUDA_CHECK(cudaMalloc(&p, bytes), "allocate", shape.to_string());
  const cudaError_t e = cudaMemsetAsync(p, 0, bytes, stream_.get());
  if (e != cudaSuccess) {
    cudaFree(p);
    TUNER_CUDA_CHECK(e, "allocate", shape.to_string());
  }
  return Tensor::adopt(static_cast<float*>(p), shape, &cuda::release_device_memory);
}

void CudaBackend::stage_upload(const void* host, void* dst, size_t bytes, const char* op) {
  const auto* src = static_cast<const char*>(host);
  auto* out = static_cast<char*>(dst);
  for (size_t off = 0; off < bytes; off += cuda::kStagingChunkBytes) {
    const size_t chunk = std::min(cuda::kStagingChunkBytes, bytes - off);
    Staging& st = staging_[next_staging_];
    next_staging_ ^= 1;
    if (st.in_flight) {
      // The buffer's previous copy must have left it before it is overwritten.
      TUNER_CUDA_CHECK(cudaEventSynchronize(st.copied.get()), op,
                       cuda::args("bytes", static_cast<int64_t>(bytes)));
      st.in_flight = false;
    }
    void* pinned = st.host.reserve(chunk, op);
    std::memcpy(pinned, src + off, chunk);
    TUNER_CUDA_CHECK(
        cudaMemcpyAsync(out + off, pinned, chunk, cudaMemcpyHostToDevice, stream_.get()), op,
        cuda::args("bytes", static_cast<int64_t>(bytes)));
    TUNER_CUDA_CHECK(cudaEventRecord(st.copied.get(), stream_.get()), op, std::string());
    st.in_flight = true;
  }
}

void CudaBackend::upload(std::span<const float> host, std::span<float> dst) {
  if (host.size() != dst.size()) {
    throw std::invalid_argument("cuda backend: upload of " + std::to_string(host.size()) +
                                " values into " + std::to_string(dst.size()));
  }
  if (host.empty()) return;
  stage_upload(host.data(), dst.data(), host.size_bytes(), "upload");
}

void CudaBackend::download(std::span<const float> src, std::span<float> host) {
  if (src.size() != host.size()) {
    throw std::invalid_argument("cuda backend: download of " + std::to_string(src.size()) +
                                " values into " + std::to_string(host.size()));
  }
  if (src.empty()) return;
  TUNER_CUDA_CHECK(cudaMemcpyAsync(host.data(), src.data(), src.size_bytes(),
                                   cudaMemcpyDeviceToHost, stream_.get()),
                   "download", cuda::args("n", cuda::count(src)));
  TUNER_CUDA_CHECK(cudaStreamSynchronize(stream_.get()), "download",
                   cuda::args("n", cuda::count(src)));
}

void CudaBackend::synchronize() {
  TUNER_CUDA_CHECK(cudaStreamSynchronize(stream_.get()), "synchronize", std::string());
}

// ---- Element-wise ----

void CudaBackend::activation_forward(Activation act, const Tensor& x, Tensor& y) {
  TUNER_CUDA_CHECK(cuda::launch_activation_forward(y.data(), x.data(), x.numel(),
                                                   static_cast<int>(act), stream_.get()),
                   "activation_forward", cuda::args("x", x, "y", y));
}

void CudaBackend::activation_backward(Activation act, const Tensor& x, const Tensor& y,
                                      const Tensor& dy, Tensor& dx) {
  TUNER_CUDA_CHECK(
      cuda::launch_activation_backward(dx.data(), x.data(), y.data(), dy.data(), x.numel(),
                                       static_cast<int>(act), stream_.get()),
      "activation_backward", cuda::args("x", x, "y", y, "dy", dy, "dx", dx));
}

void CudaBackend::dropout_forward(float p, uint64_t seed, const Tensor& x, Tensor& mask,
                                  Tensor& y) {
  // The CPU's constants (cpu_backend.cc), so the masks are bit-identical.
  const float keep_scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  const uint64_t threshold = static_cast<uint64_t>(static_cast<double>(p) * (1 << 24));
  const uint64_t key = mix64(seed);
  TUNER_CUDA_CHECK(cuda::launch_dropout(y.data(), mask.data(), x.data(), x.numel(), key, threshold,
                                        keep_scale, stream_.get()),
                   "dropout_forward", cuda::args("x", x, "mask", mask, "y", y));
}

void CudaBackend::mul(const Tensor& a, const Tensor& b, Tensor& y) {
  TUNER_CUDA_CHECK(cuda::launch_mul(y.data(), a.data(), b.data(), a.numel(), stream_.get()), "mul",
                   cuda::args("a", a, "b", b, "y", y));
}

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  TUNER_CUDA_CHECK(cuda::launch_add(y.data(), a.data(), b.data(), a.numel(), stream_.get()), "add",
                   cuda::args("a", a, "b", b, "y", y));
}

void CudaBackend::copy(const Tensor& x, Tensor& y) {
  if (x.data() == y.data() || x.numel() == 0) return;
  TUNER_CUDA_CHECK(
      cudaMemcpyAsync(y.data(), x.data(), static_cast<size_t>(x.numel()) * sizeof(float),
                      cudaMemcpyDeviceToDevice, stream_.get()),
      "copy", cuda::args("x", x, "y", y));
}

// ---- Losses ----

float CudaBackend::softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels,
                                         float label_smoothing, Tensor* dlogits) {
  const char* op = "softmax_cross_entropy";
  const int64_t batch = logits.dim(0), k = logits.dim(1);
  if (static_cast<int64_t>(labels.size()) < batch) {
    throw std::invalid_argument(
        "cuda backend: softmax_cross_entropy: " + std::to_string(labels.size()) +
        " labels for logits " + logits.shape().to_string());
  }
  // Labels are host memory: checked here (a bad one would read out of bounds on the device).
  for (int64_t r = 0; r < batch; ++r) {
    if (labels[r] < 0 || labels[r] >= k) {
      throw std::out_of_range("cuda backend: softmax_cross_entropy: label " +
                              std::to_string(labels[r]) + " of row " + std::to_string(r) +
                              " is not in [0, " + std::to_string(k) + ")");
    }
  }
  const size_t label_bytes = static_cast<size_t>(batch) * sizeof(int32_t);
  void* dev_labels = labels_.reserve(std::max<size_t>(label_bytes, 1), stream_.get(), op);
  if (batch > 0) stage_upload(labels.data(), dev_labels, label_bytes, op);
  TUNER_CUDA_CHECK(
      cuda::launch_softmax_cross_entropy(
          reduce_scratch(), dlogits != nullptr ? dlogits->data() : nullptr, logits.data(),
          static_cast<const int32_t*>(dev_labels), batch, k, label_smoothing, stream_.get()),
      op, cuda::args("logits", logits, "dlogits", dlogits));
  const double total = read_result(op);
  return static_cast<float>(total / static_cast<double>(batch));
}

float CudaBackend::mean_squared_error(const Tensor& pred, const Tensor& target, Tensor* dpred) {
  const char* op = "mean_squared_error";
  const int64_t n = pred.numel();
  TUNER_CUDA_CHECK(
      cuda::launch_squared_error(reduce_scratch(), dpred != nullptr ? dpred->data() : nullptr,
                                 pred.data(), target.data(), n, stream_.get()),
      op, cuda::args("pred", pred, "target", target, "dpred", dpred));
  const double total = read_result(op);
  return static_cast<float>(total / static_cast<double>(n));
}

// ---- Flat parameter arrays ----

void CudaBackend::sgd_step(const SgdStepArgs& a, std::span<float> params,
                           std::span<const float> grads, std::span<float> velocity) {
  TUNER_CUDA_CHECK(
      cuda::launch_sgd(params.data(), grads.data(), velocity.data(),
                       static_cast<int64_t>(params.size()), a.lr, a.momentum, a.dampening,
                       a.weight_decay, a.nesterov, a.first_step, stream_.get()),
      "sgd_step", cuda::args("n", static_cast<int64_t>(params.size())));
}

void CudaBackend::adam_step(const AdamStepArgs& a, std::span<float> params,
                            std::span<const float> grads, std::span<float> m, std::span<float> v) {
  // The CPU's constants (cpu_backend.cc), computed the same way.
  const double bc1 = 1.0 - std::pow(static_cast<double>(a.beta1), static_cast<double>(a.step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(a.beta2), static_cast<double>(a.step));
  const float step_size = static_cast<float>(a.lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float decay = a.decoupled ? 1.0f - a.lr * a.weight_decay : 1.0f;
  const float l2 = a.decoupled ? 0.0f : a.weight_decay;
  TUNER_CUDA_CHECK(cuda::launch_adam(params.data(), grads.data(), m.data(), v.data(),
                                     static_cast<int64_t>(params.size()), a.beta1, a.beta2, a.eps,
                                     step_size, inv_sqrt_bc2, decay, l2, stream_.get()),
                   "adam_step", cuda::args("n", static_cast<int64_t>(params.size())));
}

double CudaBackend::sum_squares(std::span<const float> x) {
  TUNER_CUDA_CHECK(
      cuda::launch_sum_squares(reduce_scratch(), x.data(), cuda::count(x), stream_.get()),
      "sum_squares", cuda::args("n", cuda::count(x)));
  return read_result("sum_squares");
}

void CudaBackend::scale(std::span<float> x, float factor) {
  TUNER_CUDA_CHECK(
      cuda::launch_scale(x.data(), factor, static_cast<int64_t>(x.size()), stream_.get()), "scale",
      cuda::args("n", static_cast<int64_t>(x.size())));
}

}  // namespace tuner::training
