// The op suite every backend passes (after ggml's test-backend-ops): each case of a table builds
// its inputs from fixed seeds, runs one op (or a forward + backward pair) on the CPU backend, the
// reference, and on the backend under test, and compares every output with a relative + absolute
// tolerance, or bit for bit where the contract promises it (dropout masks, max-pool argmax).
// Each case is its own test, so one failing op hides no other. Adding an op is one line in
// all_cases(); adding a backend is one line in kBackends.
//
// A backend whose products round their inputs to bf16 (cpu_bf16, cuda_bf16) is held to a bf16
// tolerance on the outputs that come out of a GEMM (Bench::record_product: 1e-2 relative, 1e-2 *
// sqrt(K) times the terms' scale absolute) and to the usual tolerance on everything else. A backend
// whose convolutions do not unfold their input (cuda_cudnn) leaves the im2col buffer `col`
// unwritten: it is not compared there; nor where the CPU backend, the reference, does not unfold
// (cpu_conv2d_unfolds).
//
// A backend that cannot run here skips every test with its reason ("no GPU: ..." for CUDA ones;
// for cpu_bf16, a CPU with neither AMX nor AVX512-BF16).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "training/backend.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cuda/cuda_backend.h"
#include "training/rng.h"

namespace tuner::training {
namespace {

// ---- Backends under test ----

struct BackendUnderTest {
  const char* name;
  std::function<std::string()> unavailable;  // empty when it can be made here
  std::function<std::unique_ptr<Backend>()> make;
  bool bf16_products = false;  // its GEMMs round their inputs to bf16
  bool unfolds = true;         // its convolutions write the im2col buffer `col`
  // Its convolutions may compute in a transformed domain (cuDNN's FFT and Winograd algorithms,
  // which its heuristics pick for their speed): their rounding error is bounded by the scale of
  // the summed terms, as a GEMM's, not by each output's magnitude (see MatchesCpu).
  bool transform_domain_products = false;
  // When it differs from an entry above in some ops only: the prefix of their cases' names (the
  // op cases it runs; the memory tests it runs all).
  std::string only_cases;
};

const std::vector<BackendUnderTest>& backends_under_test() {
  static const std::vector<BackendUnderTest> kBackends = {
      {"cpu_bf16", [] { return cpu_bf16_unavailable(); },
       [] { return make_cpu_backend(2, Precision::kBfloat16); }, true},
      {"cuda", [] { return cuda_backend_unavailable(0); }, [] { return make_cuda_backend(0); }},
      {"cuda_bf16", [] { return cuda_backend_unavailable(0); },
       [] { return make_cuda_backend(0, {.matmul = Precision::kBfloat16}); }, true},
      {"cuda_cudnn", [] { return cudnn_unavailable(0); },
       [] { return make_cuda_backend(0, {.convolution = Convolution::kCudnn}); }, false, false,
       true, "conv2d"},
  };
  return kBackends;
}

// One backend per entry for every op case, made at its first: a fresh one per case would cost
// more than the case (cuBLAS and cuDNN handles), and a trainer, too, runs every op on one. Never
// destroyed: its teardown would race the CUDA runtime's at exit.
Backend& shared_backend(size_t index) {
  static std::vector<Backend*> made(backends_under_test().size(), nullptr);
  Backend*& backend = made[index];
  if (backend == nullptr) backend = backends_under_test()[index].make().release();
  return *backend;
}

// ---- What a case sees: a backend, seeded inputs in its memory, recorded outputs ----

struct Tolerance {
  double rtol = 1e-5, atol = 1e-6;  // |got - want| <= atol + rtol * |want|; both 0: bit for bit
};

struct Output {
  std::string name;
  std::vector<double> values;
  // For outputs of a GEMM: the tolerance that replaces the case's on a backend whose products
  // round their inputs to bf16.
  std::optional<Tolerance> bf16;
};

// The bf16 tolerance of a product whose outputs sum k terms a_i * b_i with |a_i * b_i| <= scale:
// each input is rounded with relative error <= 2^-9, so a term errs by about 2^-8 |a_i b_i| and
// k independent errors by sqrt(k) times that; 1e-2 * sqrt(k) * scale is several of their sigmas.
Tolerance bf16_product(int64_t k, double scale) {
  return {1e-2, 1e-2 * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1))) * scale};
}

// Builds a case's inputs on one backend (the same values on every backend: they come from the
// seeds) and downloads the outputs the case records.
class Bench {
 public:
  // `unfolds`: the backend under test writes `col` (record_unfolded() records it).
  explicit Bench(Backend& backend, bool unfolds = true) : backend_(backend), unfolds_(unfolds) {}

  Backend& backend() { return backend_; }

  // Uniform values in [lo, hi) drawn from `seed`.
  Tensor random(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    Rng rng(seed);
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (float& x : v) x = rng.uniform(lo, hi);
    return values(shape, v);
  }
  // Values in {-1, 0, 1} (many ties: pins the first-maximum rule of max pooling).
  Tensor ternary(const Shape& shape, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (float& x : v) x = std::floor(rng.uniform(0.0f, 3.0f)) - 1.0f;
    return values(shape, v);
  }
  Tensor values(const Shape& shape, const std::vector<float>& v) {
    Tensor t = backend_.allocate(shape);
    backend_.upload(v, t.span());
    return t;
  }
  Tensor zeros(const Shape& shape) { return backend_.allocate(shape); }

  std::vector<float> download(const Tensor& t) {
    std::vector<float> host(static_cast<size_t>(t.numel()));
    backend_.download(t.span(), host);
    return host;
  }
  void record(const std::string& name, const Tensor& t) {
    const std::vector<float> host = download(t);
    outputs_.push_back({name, std::vector<double>(host.begin(), host.end())});
  }
  // Records an int32 array stored in a float tensor (argmax) by value.
  void record_ints(const std::string& name, const Tensor& t) {
    const std::vector<float> host = download(t);
    std::vector<double> v(host.size());
    for (size_t i = 0; i < host.size(); ++i) {
      int32_t k;
      std::memcpy(&k, &host[i], sizeof k);
      v[i] = k;
    }
    outputs_.push_back({name, std::move(v)});
  }
  void record(const std::string& name, double value) { outputs_.push_back({name, {value}}); }
  // Records a convolution's im2col buffer, where the backend under test writes one.
  void record_unfolded(const std::string& name, const Tensor& t) {
    if (unfolds_) record(name, t);
  }
  // Records an output computed by a GEMM of reduction length k over terms bounded by `scale`
  // (see bf16_product).
  void record_product(const std::string& name, const Tensor& t, int64_t k, double scale) {
    record(name, t);
    outputs_.back().bf16 = bf16_product(k, scale);
  }

  const std::vector<Output>& outputs() const { return outputs_; }

 private:
  Backend& backend_;
  bool unfolds_;
  std::vector<Output> outputs_;
};

std::span<int32_t> as_ints(Tensor& t) {
  return {reinterpret_cast<int32_t*>(t.data()), static_cast<size_t>(t.numel())};
}

// ---- The table ----

constexpr Tolerance kExact{0.0, 0.0};
constexpr Tolerance kElementwise{1e-5, 1e-6};
constexpr Tolerance kReduction{1e-4, 1e-5};  // sums in another order (trees vs loops)
constexpr Tolerance kProduct{1e-4, 1e-4};    // fp32 GEMMs of a few hundred terms

struct OpCase {
  std::string name;
  Tolerance tol;
  std::function<void(Bench&)> run;
};

const Activation kAllActs[] = {Activation::kNone, Activation::kRelu, Activation::kGelu,
                               Activation::kTanh, Activation::kSigmoid};
const Activation kFusableActs[] = {Activation::kNone, Activation::kRelu, Activation::kTanh,
                                   Activation::kSigmoid};

// "3x7x5" (for test names).
std::string dims(std::span<const int64_t> d) {
  std::string s;
  for (int64_t v : d) {
    if (!s.empty()) s += 'x';
    s += std::to_string(v);
  }
  return s;
}
std::string dims(std::initializer_list<int64_t> d) { return dims(std::span(d.begin(), d.size())); }

void add_gemm_cases(std::vector<OpCase>& cases) {
  struct Mnk {
    int64_t m, n, k;
  };
  for (const Mnk& s : {Mnk{37, 6, 13}, Mnk{5, 41, 13}, Mnk{64, 96, 200}, Mnk{1, 1, 1}}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      cases.push_back(
          {"gemm_" + std::string(ta ? "T" : "N") + (tb ? "T" : "N") + "_" + dims({s.m, s.n, s.k}),
           kProduct, [=](Bench& b) {
             Tensor a = b.random(ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, 1);
             Tensor bb = b.random(tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, 2);
             Tensor c = b.random(Shape{s.m, s.n}, 3);
             b.backend().gemm(ta ? Transpose::kYes : Transpose::kNo,
                              tb ? Transpose::kYes : Transpose::kNo, 0.5f, a, bb, 2.0f, c);
             b.record_product("c", c, s.k, 0.5);
           }});
    }
  }
}

void add_linear_cases(std::vector<OpCase>& cases) {
  struct Bio {
    int64_t b, i, o;
  };
  for (const Bio& s : {Bio{3, 7, 5}, Bio{128, 784, 512}, Bio{33, 65, 10}}) {
    for (Activation act : kFusableActs) {
      for (int with_bias = 0; with_bias < 2; ++with_bias) {
        const std::string tag = std::string(activation_name(act)) + (with_bias ? "_bias_" : "_") +
                                dims({s.b, s.i, s.o});
        cases.push_back({"linear_forward_" + tag, kProduct, [=](Bench& b) {
                           Tensor x = b.random(Shape{s.b, s.i}, 11);
                           Tensor w = b.random(Shape{s.o, s.i}, 12, -0.1f, 0.1f);
                           Tensor bias = b.random(Shape{s.o}, 13);
                           Tensor y = b.zeros(Shape{s.b, s.o});
                           b.backend().linear_forward(x, w, with_bias ? &bias : nullptr, act, y);
                           b.record_product("y", y, s.i, 0.1);
                         }});
        // with_bias doubles as "with dx and db" for the backward.
        cases.push_back({"linear_backward_" + tag, kProduct, [=](Bench& b) {
                           Tensor x = b.random(Shape{s.b, s.i}, 21);
                           Tensor w = b.random(Shape{s.o, s.i}, 22, -0.1f, 0.1f);
                           // y = act(z) for a random z, not the forward's output: act'(y) must
                           // not hang on the forward's precision (bf16 flips relu near 0).
                           Tensor z = b.random(Shape{s.b, s.o}, 23);
                           Tensor y = b.zeros(Shape{s.b, s.o});
                           b.backend().activation_forward(act, z, y);
                           Tensor dy = b.random(Shape{s.b, s.o}, 24);
                           Tensor dz = b.zeros(Shape{s.b, s.o});
                           Tensor dx = b.zeros(Shape{s.b, s.i});
                           Tensor dw = b.zeros(Shape{s.o, s.i});
                           Tensor db = b.zeros(Shape{s.o});
                           b.backend().linear_backward(x, w, y, act, dy, dz,
                                                       with_bias ? &dx : nullptr, dw,
                                                       with_bias ? &db : nullptr);
                           if (act != Activation::kNone) b.record("dz", dz);
                           // |dz| <= 1: |dy| <= 1 and |act'| <= 1.
                           if (with_bias) b.record_product("dx", dx, s.o, 0.1);
                           b.record_product("dw", dw, s.b, 1.0);
                           if (with_bias) b.record("db", db);
                         }});
      }
    }
  }
}

struct ConvGeom {
  int64_t b, c, h, w, o;
  Window2d win;
  Shape x() const { return Shape{b, c, h, w}; }
  Shape w_shape() const { return Shape{o, c, win.kernel_h, win.kernel_w}; }
  Shape y() const { return Shape{b, o, win.out_h(h), win.out_w(w)}; }
  Shape col() const {
    return Shape{b, c * win.kernel_h * win.kernel_w, win.out_h(h) * win.out_w(w)};
  }
  std::string tag() const {
    return dims({b, c, h, w}) + "_o" + std::to_string(o) + "_k" +
           dims({win.kernel_h, win.kernel_w}) + "_s" + std::to_string(win.stride) + "_p" +
           std::to_string(win.padding);
  }
};

const ConvGeom kConvGeoms[] = {
    {3, 2, 7, 7, 4, {3, 3, 1, 1}},
    {3, 2, 7, 7, 4, {3, 3, 2, 1}},
    {2, 3, 8, 6, 5, {2, 3, 2, 0}},
    {2, 3, 5, 5, 6, {1, 1, 1, 0}},
    {2, 3, 9, 8, 5, {5, 5, 3, 2}},
    {16, 1, 28, 28, 32, {3, 3, 1, 1}},
    {8, 32, 14, 14, 64, {3, 3, 1, 1}},
    {4, 64, 7, 7, 64, {1, 1, 1, 0}},
    {3, 16, 12, 11, 8, {5, 5, 1, 2}},
    {5, 64, 9, 9, 1, {3, 3, 2, 0}},
    {2, 1, 6, 6, 3, {1, 1, 2, 1}},
    {4, 8, 10, 10, 16, {5, 5, 2, 0}},
    // On oneDNN's primitives in the CPU backends: a ResNet's downsampling convolution over an odd
    // plane, and one sample at the fewest channels (threads without a sample).
    {3, 16, 9, 9, 24, {3, 3, 2, 1}},
    {1, 8, 5, 7, 16, {3, 3, 1, 1}},
};

void add_conv_cases(std::vector<OpCase>& cases) {
  for (const ConvGeom& g : kConvGeoms) {
    for (Activation act : kAllActs) {
      const std::string tag = std::string(activation_name(act)) + "_" + g.tag();
      for (int with_bias = 0; with_bias < 2; ++with_bias) {
        cases.push_back(
            {"conv2d_forward_" + tag + (with_bias ? "" : "_nobias"), kProduct, [=](Bench& b) {
               Tensor x = b.random(g.x(), 31);
               Tensor w = b.random(g.w_shape(), 32, -0.3f, 0.3f);
               Tensor bias = b.random(Shape{g.o}, 33);
               Tensor col = b.zeros(g.col());
               Tensor y = b.zeros(g.y());
               b.backend().conv2d_forward(g.win, x, w, with_bias ? &bias : nullptr, act, col, y);
               // Compared where the reference unfolds too (the CPU backend's oneDNN
               // convolutions keep x there in oneDNN's layout instead).
               if (cpu_conv2d_unfolds(g.win, g.c)) b.record_unfolded("col", col);
               b.record_product("y", y, g.c * g.win.kernel_h * g.win.kernel_w, 0.3);
             }});
      }
      if (!activation_fusable(act)) continue;  // the backward takes act' from the output
      for (int full = 0; full < 2; ++full) {
        cases.push_back(
            {"conv2d_backward_" + tag + (full ? "_dx_db" : ""), kProduct, [=](Bench& b) {
               Tensor x = b.random(g.x(), 41);
               Tensor w = b.random(g.w_shape(), 42, -0.3f, 0.3f);
               Tensor bias = b.random(Shape{g.o}, 43);
               Tensor col = b.zeros(g.col());
               Tensor forward_y = b.zeros(g.y());
               b.backend().conv2d_forward(g.win, x, w, &bias, act, col, forward_y);
               // y = act(z) for a random z (as in linear_backward): act'(y) must not hang on
               // the forward's precision.
               Tensor z = b.random(g.y(), 45);
               Tensor y = b.zeros(g.y());
               b.backend().activation_forward(act, z, y);
               Tensor dy = b.random(g.y(), 44);
               Tensor dz = b.zeros(g.y());
               Tensor dx = b.zeros(g.x());
               Tensor dw = b.zeros(g.w_shape());
               Tensor db = b.zeros(Shape{g.o});
               Tensor work =
                   b.zeros(Shape{b.backend().conv2d_backward_workspace(g.win, g.x(), g.o)});
               b.backend().conv2d_backward(g.win, x, w, col, y, act, dy, dz, full ? &dx : nullptr,
                                           dw, full ? &db : nullptr, work.span());
               if (act != Activation::kNone) b.record("dz", dz);
               // |dz| <= 1; dw sums over the batch and the output pixels, a pixel of dx over
               // the output channels and (at most) the kernel's taps.
               const Shape ys = g.y();
               if (full) b.record_product("dx", dx, g.o * g.win.kernel_h * g.win.kernel_w, 0.3);
               b.record_product("dw", dw, g.b * ys[2] * ys[3], 1.0);
               if (full) b.record("db", db);
             }});
      }
    }
  }
}

// conv2d_pool_* on every backend against the CPU's fused kernels. x, w and the bias take values
// in {-1, 0, 1}, so every product and sum of the convolution is exact (in bf16 too) and each
// window's maximum (ties included) is the same element everywhere: the backward then compares
// the gradients of the same elements.
void add_conv_pool_cases(std::vector<OpCase>& cases) {
  for (const ConvGeom& g : kConvGeoms) {
    const Shape cs = g.y();  // the convolution's output [B,O,OH,OW]
    const Shape pooled{g.b, g.o, cs[2] / 2, cs[3] / 2};
    for (Activation act : kFusableActs) {
      const std::string tag = std::string(activation_name(act)) + "_" + g.tag();
      for (int backward = 0; backward < 2; ++backward) {
        cases.push_back(
            {std::string(backward ? "conv2d_pool_backward_" : "conv2d_pool_forward_") + tag,
             kProduct, [=](Bench& b) {
               Tensor x = b.ternary(g.x(), 71);
               Tensor w = b.ternary(g.w_shape(), 72);
               Tensor bias = b.ternary(Shape{g.o}, 73);
               Tensor y = b.zeros(pooled);
               Tensor argmax = b.zeros(pooled);
               Tensor work = b.zeros(Shape{b.backend().conv2d_pool_workspace(g.win, g.x(), g.o)});
               b.backend().conv2d_pool_forward(g.win, x, w, &bias, act, y, as_ints(argmax),
                                               work.span());
               if (!backward) {
                 b.record("y", y);
                 b.record_ints("argmax", argmax);
                 return;
               }
               Tensor dy = b.random(pooled, 74);
               Tensor dx = b.zeros(g.x());
               Tensor dw = b.zeros(g.w_shape());
               Tensor db = b.zeros(Shape{g.o});
               b.backend().conv2d_pool_backward(g.win, x, w, y, as_ints(argmax), act, dy, &dx, dw,
                                                &db, work.span());
               // |dz| <= 1 at the windows' maxima and 0 elsewhere; |w|, |x| <= 1.
               b.record_product("dx", dx, g.o * g.win.kernel_h * g.win.kernel_w, 1.0);
               b.record_product("dw", dw, g.b * pooled[2] * pooled[3], 1.0);
               b.record("db", db);
             }});
      }
    }
  }
}

struct PoolGeom {
  int64_t b, c, h, w;
  Window2d win;
  Shape x() const { return Shape{b, c, h, w}; }
  Shape y() const { return Shape{b, c, win.out_h(h), win.out_w(w)}; }
  std::string tag() const {
    return dims({b, c, h, w}) + "_k" + dims({win.kernel_h, win.kernel_w}) + "_s" +
           std::to_string(win.stride) + "_p" + std::to_string(win.padding);
  }
};

const PoolGeom kPoolGeoms[] = {
    {3, 2, 7, 7, {2, 2, 2, 0}}, {3, 2, 7, 7, {3, 3, 2, 1}},     {2, 3, 6, 5, {3, 3, 1, 1}},
    {2, 3, 9, 8, {2, 3, 3, 1}}, {16, 32, 28, 28, {2, 2, 2, 0}},
};

void add_pool_cases(std::vector<OpCase>& cases) {
  for (const PoolGeom& g : kPoolGeoms) {
    for (int ties = 0; ties < 2; ++ties) {
      // Max pooling picks the same elements (the first maximum of each window) and sums the same
      // gradients in the same order on every backend: everything is bit for bit.
      cases.push_back({"max_pool2d_" + g.tag() + (ties ? "_ties" : ""), kExact, [=](Bench& b) {
                         Tensor x = ties ? b.ternary(g.x(), 51) : b.random(g.x(), 51);
                         Tensor y = b.zeros(g.y());
                         Tensor argmax = b.zeros(g.y());
                         b.backend().max_pool2d_forward(g.win, x, y, as_ints(argmax));
                         Tensor dy = b.random(g.y(), 52);
                         Tensor dx = b.zeros(g.x());
                         b.backend().max_pool2d_backward(g.win, as_ints(argmax), dy, dx);
                         b.record("y", y);
                         b.record_ints("argmax", argmax);
                         b.record("dx", dx);
                       }});
    }
    cases.push_back({"avg_pool2d_" + g.tag(), kElementwise, [=](Bench& b) {
                       Tensor x = b.random(g.x(), 53);
                       Tensor y = b.zeros(g.y());
                       b.backend().avg_pool2d_forward(g.win, x, y);
                       Tensor dy = b.random(g.y(), 54);
                       Tensor dx = b.zeros(g.x());
                       b.backend().avg_pool2d_backward(g.win, dy, dx);
                       b.record("y", y);
                       b.record("dx", dx);
                     }});
  }
  for (const Shape& s : {Shape{3, 5, 7, 7}, Shape{2, 3, 1, 1}, Shape{4, 6, 13, 11}}) {
    cases.push_back(
        {"global_avg_pool_" + dims({s[0], s[1], s[2], s[3]}), kReduction, [=](Bench& b) {
           Tensor x = b.random(s, 61);
           Tensor y = b.zeros(Shape{s[0], s[1]});
           b.backend().global_avg_pool_forward(x, y);
           Tensor dy = b.random(Shape{s[0], s[1]}, 62);
           Tensor dx = b.zeros(s);
           b.backend().global_avg_pool_backward(dy, dx);
           b.record("y", y);
           b.record("dx", dx);
         }});
  }
}

void add_elementwise_cases(std::vector<OpCase>& cases) {
  for (const Shape& s : {Shape{3, 7, 5}, Shape{1000, 37}}) {
    const std::string tag = dims({s.numel()});
    for (Activation act : kAllActs) {
      cases.push_back({"activation_" + std::string(activation_name(act)) + "_" + tag,
                       // erff/expf/tanhf of CUDA and glibc differ by a few ulp.
                       Tolerance{1e-5, 1e-6}, [=](Bench& b) {
                         Tensor x = b.random(s, 71, -4.0f, 4.0f);
                         Tensor y = b.zeros(s);
                         b.backend().activation_forward(act, x, y);
                         Tensor dy = b.random(s, 72);
                         Tensor dx = b.zeros(s);
                         b.backend().activation_backward(act, x, y, dy, dx);
                         Tensor inplace = b.random(s, 71, -4.0f, 4.0f);
                         b.backend().activation_forward(act, inplace, inplace);  // y aliases x
                         b.record("y", y);
                         b.record("dx", dx);
                         b.record("y_inplace", inplace);
                       }});
    }
    cases.push_back({"mul_add_copy_" + tag, kExact, [=](Bench& b) {
                       Tensor a = b.random(s, 81);
                       Tensor c = b.random(s, 82);
                       Tensor prod = b.zeros(s);
                       Tensor sum = b.zeros(s);
                       b.backend().mul(a, c, prod);
                       b.backend().add(a, c, sum);
                       b.backend().add(a, c, a);  // y aliases a
                       Tensor flat = b.zeros(Shape{s.numel()});
                       b.backend().copy(prod, flat);
                       b.record("mul", prod);
                       b.record("add", sum);
                       b.record("add_inplace", a);
                       b.record("copy", flat);
                     }});
  }
  for (float p : {0.0f, 0.3f, 0.5f, 0.9f, 1.0f}) {
    for (int64_t n : {int64_t{7}, int64_t{100003}}) {
      cases.push_back({"dropout_p" + std::to_string(static_cast<int>(p * 100)) + "_" + dims({n}),
                       kExact, [=](Bench& b) {
                         Tensor x = b.random(Shape{n}, 91);
                         Tensor mask = b.zeros(Shape{n});
                         Tensor y = b.zeros(Shape{n});
                         b.backend().dropout_forward(p, 0x5eed + n, x, mask, y);
                         b.record("mask", mask);
                         b.record("y", y);
                       }});
    }
  }
}

void add_norm_cases(std::vector<OpCase>& cases) {
  for (const Shape& s : {Shape{3, 4, 5, 5}, Shape{7, 6}, Shape{1, 3, 2, 2}, Shape{64, 32, 7, 9}}) {
    const std::string tag = dims(s.dims());
    const int64_t c = s[1];
    cases.push_back({"batch_norm_train_" + tag, kReduction, [=](Bench& b) {
                       Tensor x = b.random(s, 101, -2.0f, 3.0f);
                       Tensor gamma = b.random(Shape{c}, 102, 0.5f, 1.5f);
                       Tensor beta = b.random(Shape{c}, 103);
                       Tensor rm = b.random(Shape{c}, 104);
                       Tensor rv = b.random(Shape{c}, 105, 0.5f, 2.0f);
                       Tensor mean = b.zeros(Shape{c});
                       Tensor rstd = b.zeros(Shape{c});
                       Tensor y = b.zeros(s);
                       b.backend().batch_norm_forward_train(x, gamma, beta, 1e-5f, 0.1f, rm, rv,
                                                            mean, rstd, y);
                       b.record("y", y);
                       b.record("mean", mean);
                       b.record("rstd", rstd);
                       b.record("running_mean", rm);
                       b.record("running_var", rv);
                     }});
    cases.push_back({"batch_norm_eval_" + tag, kElementwise, [=](Bench& b) {
                       Tensor x = b.random(s, 111, -2.0f, 3.0f);
                       Tensor gamma = b.random(Shape{c}, 112, 0.5f, 1.5f);
                       Tensor beta = b.random(Shape{c}, 113);
                       Tensor rm = b.random(Shape{c}, 114);
                       Tensor rv = b.random(Shape{c}, 115, 0.5f, 2.0f);
                       Tensor y = b.zeros(s);
                       b.backend().batch_norm_forward_eval(x, gamma, beta, 1e-5f, rm, rv, y);
                       b.record("y", y);
                     }});
    for (int with_dx = 0; with_dx < 2; ++with_dx) {
      cases.push_back(
          {"batch_norm_backward_" + tag + (with_dx ? "_dx" : ""), kReduction, [=](Bench& b) {
             Tensor x = b.random(s, 121, -2.0f, 3.0f);
             Tensor gamma = b.random(Shape{c}, 122, 0.5f, 1.5f);
             Tensor beta = b.random(Shape{c}, 123);
             Tensor rm = b.zeros(Shape{c});
             Tensor rv = b.zeros(Shape{c});
             Tensor mean = b.zeros(Shape{c});
             Tensor rstd = b.zeros(Shape{c});
             Tensor y = b.zeros(s);
             b.backend().batch_norm_forward_train(x, gamma, beta, 1e-5f, 0.1f, rm, rv, mean, rstd,
                                                  y);
             Tensor dy = b.random(s, 124);
             Tensor dx = b.zeros(s);
             Tensor dgamma = b.zeros(Shape{c});
             Tensor dbeta = b.zeros(Shape{c});
             b.backend().batch_norm_backward(x, gamma, mean, rstd, dy, with_dx ? &dx : nullptr,
                                             dgamma, dbeta);
             if (with_dx) b.record("dx", dx);
             b.record("dgamma", dgamma);
             b.record("dbeta", dbeta);
           }});
    }
  }
  for (const Shape& s : {Shape{3, 7}, Shape{5, 130}, Shape{2, 3, 4}, Shape{128, 512}}) {
    const int64_t rows = s[0], d = s.numel() / s[0];
    const std::string tag = dims({rows, d});
    for (int with_dx = 0; with_dx < 2; ++with_dx) {
      cases.push_back({"layer_norm_" + tag + (with_dx ? "_dx" : ""), kReduction, [=](Bench& b) {
                         Tensor x = b.random(s, 131, -2.0f, 3.0f);
                         Tensor gamma = b.random(Shape{d}, 132, 0.5f, 1.5f);
                         Tensor beta = b.random(Shape{d}, 133);
                         Tensor mean = b.zeros(Shape{rows});
                         Tensor rstd = b.zeros(Shape{rows});
                         Tensor y = b.zeros(s);
                         b.backend().layer_norm_forward(x, gamma, beta, 1e-5f, mean, rstd, y);
                         Tensor dy = b.random(s, 134);
                         Tensor dx = b.zeros(s);
                         Tensor dgamma = b.zeros(Shape{d});
                         Tensor dbeta = b.zeros(Shape{d});
                         b.backend().layer_norm_backward(x, gamma, mean, rstd, dy,
                                                         with_dx ? &dx : nullptr, dgamma, dbeta);
                         b.record("y", y);
                         b.record("mean", mean);
                         b.record("rstd", rstd);
                         if (with_dx) b.record("dx", dx);
                         b.record("dgamma", dgamma);
                         b.record("dbeta", dbeta);
                       }});
    }
  }
}

void add_loss_cases(std::vector<OpCase>& cases) {
  struct Bk {
    int64_t b, k;
  };
  for (const Bk& s : {Bk{3, 5}, Bk{128, 10}, Bk{7, 1000}, Bk{1000, 3}}) {
    for (float smoothing : {0.0f, 0.1f}) {
      for (int with_grad = 0; with_grad < 2; ++with_grad) {
        cases.push_back({"softmax_cross_entropy_" + dims({s.b, s.k}) +
                             (smoothing > 0 ? "_smooth" : "") + (with_grad ? "_grad" : ""),
                         kReduction, [=](Bench& b) {
                           Tensor logits = b.random(Shape{s.b, s.k}, 141, -5.0f, 5.0f);
                           Rng rng(142);
                           std::vector<int32_t> labels(static_cast<size_t>(s.b));
                           for (int32_t& l : labels) l = static_cast<int32_t>(rng.next_u64() % s.k);
                           Tensor d = b.zeros(Shape{s.b, s.k});
                           const float loss = b.backend().softmax_cross_entropy(
                               logits, labels, smoothing, with_grad ? &d : nullptr);
                           b.record("loss", loss);
                           if (with_grad) b.record("dlogits", d);
                         }});
      }
    }
  }
  for (const Shape& s : {Shape{3, 7}, Shape{1000, 3}, Shape{1, 1}}) {
    for (int with_grad = 0; with_grad < 2; ++with_grad) {
      cases.push_back({"mean_squared_error_" + dims({s[0], s[1]}) + (with_grad ? "_grad" : ""),
                       kReduction, [=](Bench& b) {
                         Tensor pred = b.random(s, 151);
                         Tensor target = b.random(s, 152);
                         Tensor d = b.zeros(s);
                         const float loss =
                             b.backend().mean_squared_error(pred, target, with_grad ? &d : nullptr);
                         b.record("loss", loss);
                         if (with_grad) b.record("dpred", d);
                       }});
    }
  }
}

void add_optimizer_cases(std::vector<OpCase>& cases) {
  const int64_t n = 100003;
  struct Sgd {
    const char* tag;
    SgdStepArgs args;
  };
  const Sgd sgds[] = {
      {"plain", {.lr = 0.1f}},
      {"momentum_first", {.lr = 0.1f, .momentum = 0.9f, .first_step = true}},
      {"momentum", {.lr = 0.1f, .momentum = 0.9f, .dampening = 0.1f, .weight_decay = 1e-2f}},
      {"nesterov", {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-2f, .nesterov = true}},
  };
  for (const Sgd& s : sgds) {
    cases.push_back({std::string("sgd_step_") + s.tag, kElementwise, [=](Bench& b) {
                       Tensor p = b.random(Shape{n}, 161);
                       Tensor g = b.random(Shape{n}, 162);
                       Tensor vel = b.random(Shape{n}, 163);
                       b.backend().sgd_step(s.args, p.span(), g.span(), vel.span());
                       b.record("params", p);
                       b.record("velocity", vel);
                     }});
  }
  struct Adam {
    const char* tag;
    AdamStepArgs args;
  };
  const Adam adams[] = {
      {"adam_step1", {.step = 1}},
      {"adam_l2_step10", {.weight_decay = 1e-2f, .step = 10}},
      {"adamw_step7", {.lr = 3e-3f, .weight_decay = 1e-2f, .decoupled = true, .step = 7}},
  };
  for (const Adam& a : adams) {
    cases.push_back({std::string("adam_step_") + a.tag, kElementwise, [=](Bench& b) {
                       Tensor p = b.random(Shape{n}, 171);
                       Tensor g = b.random(Shape{n}, 172);
                       Tensor m = b.random(Shape{n}, 173, -0.1f, 0.1f);
                       Tensor v = b.random(Shape{n}, 174, 0.0f, 0.01f);
                       b.backend().adam_step(a.args, p.span(), g.span(), m.span(), v.span());
                       b.record("params", p);
                       b.record("m", m);
                       b.record("v", v);
                     }});
  }
  for (int64_t len : {int64_t{1}, int64_t{1000}, int64_t{(1 << 20) + 7}}) {
    cases.push_back({"sum_squares_scale_" + dims({len}), Tolerance{1e-10, 0.0}, [=](Bench& b) {
                       Tensor x = b.random(Shape{len}, 181);
                       b.record("sum_squares", b.backend().sum_squares(x.span()));
                       b.backend().scale(x.span(), 0.37f);
                       b.record("scaled", x);
                     }});
  }
}

const std::vector<OpCase>& all_cases() {
  static const std::vector<OpCase> kCases = [] {
    std::vector<OpCase> c;
    add_gemm_cases(c);
    add_linear_cases(c);
    add_conv_cases(c);
    add_conv_pool_cases(c);
    add_pool_cases(c);
    add_elementwise_cases(c);
    add_norm_cases(c);
    add_loss_cases(c);
    add_optimizer_cases(c);
    return c;
  }();
  return kCases;
}

// ---- Comparison ----

bool same_bits(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Empty when `got` matches `want` within tol; else which output, how many elements, and the
// worst one.
std::string compare(const Output& want, const Output& got, Tolerance tol, bool exact) {
  std::ostringstream msg;
  if (want.values.size() != got.values.size()) {
    msg << want.name << ": " << got.values.size() << " values, want " << want.values.size();
    return msg.str();
  }
  size_t bad = 0, worst = 0;
  double worst_excess = -1.0;
  for (size_t i = 0; i < want.values.size(); ++i) {
    const double w = want.values[i], g = got.values[i];
    if (same_bits(w, g)) continue;
    const double err = std::abs(g - w);  // NaN when one side is NaN
    double excess = std::isfinite(err) ? err : INFINITY;
    if (!exact) {
      const double allowed = tol.atol + tol.rtol * std::abs(w);
      if (err <= allowed) continue;
      excess = std::isfinite(err) ? err / std::max(allowed, 1e-300) : INFINITY;
    }
    ++bad;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (bad == 0) return "";
  const double w = want.values[worst], g = got.values[worst];
  msg.precision(9);
  msg << "output '" << want.name << "': " << bad << " of " << want.values.size()
      << " elements differ" << (exact ? " (must be bit-identical)" : "") << "; worst at [" << worst
      << "]: got " << g << ", cpu " << w << ", |diff| " << std::abs(g - w);
  if (!exact) msg << ", allowed " << tol.atol + tol.rtol * std::abs(w);
  return msg.str();
}

// ---- The parametrized op tests ----

using OpParam = std::tuple<size_t, size_t>;  // (backend index, case index)

class BackendOps : public ::testing::TestWithParam<OpParam> {
 protected:
  const BackendUnderTest& under_test() const {
    return backends_under_test()[std::get<0>(GetParam())];
  }
  const OpCase& op() const { return all_cases()[std::get<1>(GetParam())]; }
};

std::string op_param_name(const ::testing::TestParamInfo<OpParam>& info) {
  std::string name = std::string(backends_under_test()[std::get<0>(info.param)].name) + "_" +
                     all_cases()[std::get<1>(info.param)].name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

#define SKIP_WITHOUT(backend)                               \
  do {                                                      \
    const std::string tuner_why_ = (backend).unavailable(); \
    if (!tuner_why_.empty()) GTEST_SKIP() << tuner_why_;    \
  } while (0)

TEST_P(BackendOps, MatchesCpu) {
  SKIP_WITHOUT(under_test());
  const OpCase& c = op();
  std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  Backend* dev = &shared_backend(std::get<0>(GetParam()));
  Bench want(*cpu, under_test().unfolds), got(*dev, under_test().unfolds);
  c.run(want);
  c.run(got);
  ASSERT_EQ(want.outputs().size(), got.outputs().size()) << c.name;
  for (size_t i = 0; i < want.outputs().size(); ++i) {
    const Output& w = want.outputs()[i];
    const bool bf16 = under_test().bf16_products && w.bf16.has_value();
    Tolerance tol = bf16 ? *w.bf16 : c.tol;
    if (under_test().transform_domain_products && w.bf16.has_value()) {
      // The bf16 tolerance's absolute part is 1e-2 sqrt(k) scale (bf16_product): fp32 rounding
      // in the transformed domain errs by the same shape with about 1e-5 in place of 1e-2. On
      // an H200 a filter gradient (k = 1568) differed from the CPU's by 2.9e-4 where 1e-5
      // relative to the element allowed 1.3e-4.
      tol.atol = std::max(tol.atol, w.bf16->atol * 1e-3);
    }
    const bool exact = tol.rtol == 0.0 && tol.atol == 0.0;
    const std::string diff = compare(w, got.outputs()[i], tol, exact);
    EXPECT_TRUE(diff.empty()) << "op " << c.name << " on " << dev->name() << " vs cpu"
                              << (bf16 ? " (bf16 product tolerance)" : "") << ": " << diff;
  }
}

// Same inputs, same backend: bit-identical outputs (no atomics, fixed reduction orders).
TEST_P(BackendOps, IsDeterministic) {
  SKIP_WITHOUT(under_test());
  const OpCase& c = op();
  Backend* dev = &shared_backend(std::get<0>(GetParam()));
  Bench first(*dev, under_test().unfolds), second(*dev, under_test().unfolds);
  c.run(first);
  c.run(second);
  ASSERT_EQ(first.outputs().size(), second.outputs().size());
  for (size_t i = 0; i < first.outputs().size(); ++i) {
    const std::string diff = compare(first.outputs()[i], second.outputs()[i], kExact, true);
    EXPECT_TRUE(diff.empty()) << "op " << c.name << " on " << dev->name() << " run twice: " << diff;
  }
}

std::vector<OpParam> all_params() {
  std::vector<OpParam> params;
  for (size_t b = 0; b < backends_under_test().size(); ++b) {
    const std::string& only = backends_under_test()[b].only_cases;
    for (size_t c = 0; c < all_cases().size(); ++c) {
      if (all_cases()[c].name.starts_with(only)) params.emplace_back(b, c);
    }
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(AllOps, BackendOps, ::testing::ValuesIn(all_params()), op_param_name);

// ---- Memory ----

class BackendOpsMemory : public ::testing::TestWithParam<size_t> {
 protected:
  const BackendUnderTest& under_test() const { return backends_under_test()[GetParam()]; }
};

TEST_P(BackendOpsMemory, UploadDownloadRoundTrip) {
  SKIP_WITHOUT(under_test());
  std::unique_ptr<Backend> dev = under_test().make();
  // Sizes around the staging chunk (8 MiB = 2^21 floats) and tiny ones; several uploads in a
  // row exercise the reuse of the staging buffers while earlier copies may be in flight.
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{(1 << 21) + 3}, int64_t{(5 << 20) + 1}}) {
    std::vector<Tensor> tensors;
    std::vector<std::vector<float>> hosts;
    for (uint64_t seed = 0; seed < 3; ++seed) {
      Rng rng(seed + static_cast<uint64_t>(n));
      std::vector<float> host(static_cast<size_t>(n));
      for (float& v : host) v = rng.uniform(-1.0f, 1.0f);
      tensors.push_back(dev->allocate(Shape{n}));
      dev->upload(host, tensors.back().span());
      hosts.push_back(std::move(host));
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      std::vector<float> back(static_cast<size_t>(n));
      dev->download(tensors[i].span(), back);
      ASSERT_EQ(0, std::memcmp(back.data(), hosts[i].data(), back.size() * sizeof(float)))
          << "n=" << n << " tensor " << i << " changed on the way";
    }
  }
}

TEST_P(BackendOpsMemory, AllocateReturnsZeros) {
  SKIP_WITHOUT(under_test());
  std::unique_ptr<Backend> dev = under_test().make();
  EXPECT_EQ(dev->host_accessible(), dev->name().starts_with("cpu")) << dev->name();
  for (int round = 0; round < 3; ++round) {
    // Dirty memory, free it, allocate again: the new tensor must still read as zeros.
    {
      Tensor dirty = dev->allocate(Shape{4096, 33});
      std::vector<float> ones(static_cast<size_t>(dirty.numel()), 1.0f);
      dev->upload(ones, dirty.span());
      dev->synchronize();
    }
    Tensor t = dev->allocate(Shape{4096, 33});
    EXPECT_EQ(t.shape(), (Shape{4096, 33}));
    std::vector<float> back(static_cast<size_t>(t.numel()), -1.0f);
    dev->download(t.span(), back);
    const auto nonzero = std::find_if(back.begin(), back.end(), [](float v) { return v != 0.0f; });
    EXPECT_EQ(nonzero, back.end()) << "element " << (nonzero - back.begin()) << " is " << *nonzero;
  }
}

// The mask is a function of (seed, index) only: bit-identical to the CPU for every p, and the
// fraction kept is about 1 - p.
TEST_P(BackendOpsMemory, DropoutMaskIsBitIdenticalToCpu) {
  SKIP_WITHOUT(under_test());
  std::unique_ptr<Backend> cpu = make_cpu_backend(3);
  std::unique_ptr<Backend> dev = under_test().make();
  const int64_t n = 1 << 18;
  for (float p : {0.1f, 0.5f, 0.75f}) {
    for (uint64_t seed : {uint64_t{0}, uint64_t{42}, ~uint64_t{0}}) {
      Bench want(*cpu), got(*dev);
      for (Bench* b : {&want, &got}) {
        Tensor x = b->random(Shape{n}, 7);
        Tensor mask = b->zeros(Shape{n});
        Tensor y = b->zeros(Shape{n});
        b->backend().dropout_forward(p, seed, x, mask, y);
        b->record("mask", mask);
      }
      const std::string diff = compare(want.outputs()[0], got.outputs()[0], kExact, true);
      EXPECT_TRUE(diff.empty()) << "p=" << p << " seed=" << seed << ": " << diff;
      const auto& m = got.outputs()[0].values;
      const double kept =
          static_cast<double>(std::count_if(m.begin(), m.end(), [](double v) { return v != 0; })) /
          static_cast<double>(n);
      EXPECT_NEAR(kept, 1.0 - p, 0.01) << "p=" << p << " seed=" << seed;
    }
  }
}

TEST_P(BackendOpsMemory, UnavailableReasonIsEmptyOrExplains) {
  const std::string why = under_test().unavailable();
  if (why.empty()) {
    EXPECT_NO_THROW(under_test().make());
  } else {
    EXPECT_THROW(under_test().make(), std::runtime_error) << why;
  }
}

std::string backend_param_name(const ::testing::TestParamInfo<size_t>& info) {
  return backends_under_test()[info.param].name;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, BackendOpsMemory,
                         ::testing::Range(size_t{0}, backends_under_test().size()),
                         backend_param_name);

// The bf16 mode really rounds each GEMM input to the nearest bf16, ties to even (bf16 keeps 8
// significant bits: the spacing above 1 is 2^-7), and accumulates in fp32; the default mode
// does not round. Pins the mode a tolerance alone would not tell from fp32.
void expect_bf16_products(Backend& fp32, Backend& bf16) {
  const float u = std::ldexp(1.0f, -8);  // half the bf16 spacing above 1
  // a[4,1] times b[1,1] = 1: K = 1, so c is the rounded a exactly.
  const std::vector<float> a = {1 + u, 1 + 3 * u, 1 + 1.5f * u, -(1 + 0.5f * u)};
  const std::vector<float> rounded = {1, 1 + 4 * u, 1 + 2 * u, -1};
  for (Backend* dev : {&fp32, &bf16}) {
    Bench bench(*dev);
    Tensor ta = bench.values(Shape{4, 1}, a);
    Tensor tb = bench.values(Shape{1, 1}, {1.0f});
    Tensor tc = bench.zeros(Shape{4, 1});
    dev->gemm(Transpose::kNo, Transpose::kNo, 1.0f, ta, tb, 0.0f, tc);
    EXPECT_EQ(bench.download(tc), dev == &bf16 ? rounded : a) << dev->name();
  }
  // Accumulation is fp32: 1 + 256 products of 2^-8 * 1 (all exact in bf16) sum to 2, which a
  // bf16 accumulator (1 + 2^-8 rounds back to 1) would not reach.
  Bench bench(bf16);
  std::vector<float> row(257, u);
  row[0] = 1.0f;
  Tensor ta = bench.values(Shape{1, 257}, row);
  Tensor tb = bench.values(Shape{257, 1}, std::vector<float>(257, 1.0f));
  Tensor tc = bench.zeros(Shape{1, 1});
  bf16.gemm(Transpose::kNo, Transpose::kNo, 1.0f, ta, tb, 0.0f, tc);
  EXPECT_EQ(bench.download(tc), std::vector<float>{2.0f});
}

TEST(CudaBf16Products, RoundGemmInputsToNearestEven) {
  const std::string why = cuda_backend_unavailable(0);
  if (!why.empty()) GTEST_SKIP() << "no GPU: " << why;
  std::unique_ptr<Backend> fp32 = make_cuda_backend(0);
  std::unique_ptr<Backend> bf16 = make_cuda_backend(0, {.matmul = Precision::kBfloat16});
  EXPECT_EQ(fp32->name(), "cuda");
  EXPECT_EQ(bf16->name(), "cuda-bf16");
  expect_bf16_products(*fp32, *bf16);
}

// "precision": "bf16" runs on the CPU backend too, with the CUDA backend's semantics.
TEST(CpuBf16Products, RoundGemmInputsToNearestEven) {
  const std::string why = cpu_bf16_unavailable();
  if (!why.empty()) GTEST_SKIP() << "no bf16 on this CPU: " << why;
  std::unique_ptr<Backend> fp32 = make_cpu_backend(2);
  std::unique_ptr<Backend> bf16 = make_cpu_backend(2, Precision::kBfloat16);
  EXPECT_EQ(fp32->name(), "cpu");
  EXPECT_EQ(bf16->name(), "cpu-bf16");
  expect_bf16_products(*fp32, *bf16);
}

// Where the CPU cannot, making the backend says why instead of running fp32 under a bf16 name.
// Run as on a CPU without bf16 instructions: a child whose oneDNN is limited to AVX2.
TEST(CpuBf16ProductsDeathTest, MakingOneWhereTheCpuCannotSaysWhy) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
        try {
          make_cpu_backend(1, Precision::kBfloat16);
        } catch (const std::runtime_error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::_Exit(0);
        }
        std::_Exit(1);
      },
      ::testing::ExitedWithCode(0), "make_cpu_backend: bf16 products: .*(avx2|no oneDNN)");
}

}  // namespace
}  // namespace tuner::training
