// The CPU backend's element-wise kernels, losses and optimizer steps.
#include "training/backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "training/backends/cpu/activation_math.h"
#include "training/backends/cpu/dnnl_matmul.h"
#include "training/rng.h"

namespace tuner::training {
namespace {

// Elements per thread below which an element-wise kernel runs on one thread.
constexpr int64_t kMinElementsPerThread = 16384;

}  // namespace

CpuBackend::CpuBackend(int threads, Precision matmul)
    : pool_(threads), precision_(matmul), partials_(threads, 0.0) {}

std::string cpu_bf16_unavailable() { return cpu::bf16_products_unavailable(); }

std::unique_ptr<Backend> make_cpu_backend(int threads, Precision matmul) {
  if (matmul == Precision::kBfloat16) {
    const std::string why = cpu_bf16_unavailable();
    if (!why.empty()) throw std::runtime_error("make_cpu_backend: bf16 products: " + why);
  }
  return std::make_unique<CpuBackend>(threads, matmul);
}

void CpuBackend::activation_forward(Activation act, const Tensor& x, Tensor& y) {
  const float* xp = x.data();
  float* yp = y.data();
  pool_.parallel_for(x.numel(), kMinElementsPerThread, [&](int64_t i0, int64_t i1) {
    cpu::apply_activation(act, xp + i0, yp + i0, i1 - i0);  // one pass, not a copy then act
  });
}

void CpuBackend::activation_backward(Activation act, const Tensor& x, const Tensor& y,
                                     const Tensor& dy, Tensor& dx) {
  const float* xp = x.data();
  const float* yp = y.data();
  const float* g = dy.data();
  float* out = dx.data();
  pool_.parallel_for(x.numel(), kMinElementsPerThread, [&](int64_t i0, int64_t i1) {
    if (act == Activation::kGelu) {
      for (int64_t i = i0; i < i1; ++i) out[i] = g[i] * cpu::gelu_grad(xp[i]);
    } else {
      cpu::activation_grad_from_output(act, yp + i0, g + i0, out + i0, i1 - i0);
    }
  });
}

void CpuBackend::dropout_forward(float p, uint64_t seed, const Tensor& x, Tensor& mask, Tensor& y) {
  const float keep_scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  // Keep an element when its 24-bit uniform is >= p.
  const uint64_t threshold = static_cast<uint64_t>(static_cast<double>(p) * (1 << 24));
  const uint64_t key = mix64(seed);
  const float* xd = x.data();
  float* md = mask.data();
  float* yd = y.data();
  pool_.parallel_for(x.numel(), kMinElementsPerThread, [=](int64_t i0, int64_t i1) {
    // Locals and restrict-qualified pointers (a lambda's captures lose __restrict, and the stores
    // would make it reload them), and the mask as a product rather than a select (GCC keeps a
    // select as a branch): the loop vectorizes, 64-bit multiplies included.
    const float* __restrict xp = xd;
    float* __restrict mp = md;
    float* __restrict yp = yd;
    const uint64_t k = key, below = threshold;
    const float scale = keep_scale;
    for (int64_t i = i0; i < i1; ++i) {
      const uint64_t u = mix64(k ^ static_cast<uint64_t>(i)) >> 40;
      const float m = static_cast<float>(u >= below) * scale;  // scale or +0, as a select gives
      mp[i] = m;
      yp[i] = xp[i] * m;
    }
  });
}

void CpuBackend::mul(const Tensor& a, const Tensor& b, Tensor& y) {
  const float* ap = a.data();
  const float* bp = b.data();
  float* yp = y.data();
  pool_.parallel_for(a.numel(), kMinElementsPerThread, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) yp[i] = ap[i] * bp[i];
  });
}

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  const float* ap = a.data();
  const float* bp = b.data();
  float* yp = y.data();
  pool_.parallel_for(a.numel(), kMinElementsPerThread, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) yp[i] = ap[i] + bp[i];
  });
}

void CpuBackend::copy(const Tensor& x, Tensor& y) {
  const float* xp = x.data();
  float* yp = y.data();
  if (xp == yp) return;
  pool_.parallel_for(x.numel(), kMinElementsPerThread, [&](int64_t i0, int64_t i1) {
    std::memcpy(yp + i0, xp + i0, static_cast<size_t>(i1 - i0) * sizeof(float));
  });
}

float CpuBackend::softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels,
                                        float label_smoothing, Tensor* dlogits) {
  const int64_t batch = logits.dim(0), k = logits.dim(1);
  const float* zp = logits.data();
  float* dp = dlogits ? dlogits->data() : nullptr;
  const float s = label_smoothing;
  const float inv_b = 1.0f / static_cast<float>(batch);
  std::fill(partials_.begin(), partials_.end(), 0.0);
  const int threads = num_threads();
  pool_.run([&](int t) {
    const int64_t r0 = batch * t / threads, r1 = batch * (t + 1) / threads;
    double acc = 0.0;
    for (int64_t r = r0; r < r1; ++r) {
      const float* z = zp + r * k;
      const float mx = *std::max_element(z, z + k);
      double sum = 0.0, zsum = 0.0;
      for (int64_t j = 0; j < k; ++j) {
        sum += std::exp(static_cast<double>(z[j] - mx));
        zsum += z[j];
      }
      const double lse = mx + std::log(sum);
      const int32_t y = labels[r];
      acc += lse - (1.0 - s) * z[y] - s / static_cast<double>(k) * zsum;
      if (dp != nullptr) {
        float* d = dp + r * k;
        const float inv_sum = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < k; ++j) {
          const float q = s / static_cast<float>(k) + (j == y ? 1.0f - s : 0.0f);
          d[j] = (std::exp(z[j] - mx) * inv_sum - q) * inv_b;
        }
      }
    }
    partials_[t] = acc;
  });
  double total = 0.0;
  for (double v : partials_) total += v;
  return static_cast<float>(total / static_cast<double>(batch));
}

float CpuBackend::mean_squared_error(const Tensor& pred, const Tensor& target, Tensor* dpred) {
  const int64_t n = pred.numel();
  const float* p = pred.data();
  const float* q = target.data();
  float* d = dpred ? dpred->data() : nullptr;
  const float scale2 = 2.0f / static_cast<float>(n);
  std::fill(partials_.begin(), partials_.end(), 0.0);
  const int threads = num_threads();
  pool_.run([&](int t) {
    const int64_t i0 = n * t / threads, i1 = n * (t + 1) / threads;
    double acc = 0.0;
    for (int64_t i = i0; i < i1; ++i) {
      const float e = p[i] - q[i];
      acc += static_cast<double>(e) * e;
      if (d != nullptr) d[i] = scale2 * e;
    }
    partials_[t] = acc;
  });
  double total = 0.0;
  for (double v : partials_) total += v;
  return static_cast<float>(total / static_cast<double>(n));
}

void CpuBackend::sgd_step(const SgdStepArgs& a, std::span<float> params,
                          std::span<const float> grads, std::span<float> velocity) {
  // Locals and restrict-qualified pointers, as in adam_step, so that the loops vectorize; one loop
  // per kind of step rather than a branch per element.
  const float lr = a.lr, wd = a.weight_decay, momentum = a.momentum;
  const float keep = 1.0f - a.dampening;
  const bool first = a.first_step, nesterov = a.nesterov;
  float* __restrict pp = params.data();
  const float* __restrict gp = grads.data();
  float* __restrict vp = velocity.data();
  pool_.parallel_for(static_cast<int64_t>(params.size()), kMinElementsPerThread,
                     [=](int64_t i0, int64_t i1) {
                       if (momentum == 0.0f) {
                         for (int64_t i = i0; i < i1; ++i) pp[i] -= lr * (gp[i] + wd * pp[i]);
                         return;
                       }
                       for (int64_t i = i0; i < i1; ++i) {
                         const float g = gp[i] + wd * pp[i];
                         const float buf = first ? g : momentum * vp[i] + keep * g;
                         vp[i] = buf;
                         pp[i] -= lr * (nesterov ? g + momentum * buf : buf);
                       }
                     });
}

void CpuBackend::adam_step(const AdamStepArgs& a, std::span<float> params,
                           std::span<const float> grads, std::span<float> m, std::span<float> v) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(a.beta1), static_cast<double>(a.step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(a.beta2), static_cast<double>(a.step));
  // Locals and restrict-qualified pointers: the loop below must not reload the hyperparameters
  // after each store (they could alias the arrays otherwise), so that it vectorizes.
  const float step_size = static_cast<float>(a.lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float decay = a.decoupled ? 1.0f - a.lr * a.weight_decay : 1.0f;
  const float l2 = a.decoupled ? 0.0f : a.weight_decay;
  const float beta1 = a.beta1, beta2 = a.beta2, eps = a.eps;
  const float one_minus_beta1 = 1.0f - beta1, one_minus_beta2 = 1.0f - beta2;
  float* __restrict pp = params.data();
  const float* __restrict gp = grads.data();
  float* __restrict mp = m.data();
  float* __restrict vp = v.data();
  pool_.parallel_for(static_cast<int64_t>(params.size()), kMinElementsPerThread,
                     [=](int64_t i0, int64_t i1) {
                       for (int64_t i = i0; i < i1; ++i) {
                         const float p = pp[i];
                         const float g = gp[i] + l2 * p;
                         const float mi = beta1 * mp[i] + one_minus_beta1 * g;
                         const float vi = beta2 * vp[i] + one_minus_beta2 * g * g;
                         mp[i] = mi;
                         vp[i] = vi;
                         // vi >= 0: the square root never sets errno (the backend is built
                         // with -fno-math-errno, which lets it vectorize).
                         const float denom = std::sqrt(vi) * inv_sqrt_bc2 + eps;
                         pp[i] = p * decay - step_size * mi / denom;
                       }
                     });
}

double CpuBackend::sum_squares(std::span<const float> x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::fill(partials_.begin(), partials_.end(), 0.0);
  const int threads = num_threads();
  pool_.run([&](int t) {
    const int64_t i0 = n * t / threads, i1 = n * (t + 1) / threads;
    double acc = 0.0;
    for (int64_t i = i0; i < i1; ++i) acc += static_cast<double>(x[i]) * x[i];
    partials_[t] = acc;
  });
  double total = 0.0;
  for (double v : partials_) total += v;
  return total;
}

void CpuBackend::scale(std::span<float> x, float factor) {
  pool_.parallel_for(static_cast<int64_t>(x.size()), kMinElementsPerThread,
                     [&](int64_t i0, int64_t i1) {
                       for (int64_t i = i0; i < i1; ++i) x[i] *= factor;
                     });
}

}  // namespace tuner::training
