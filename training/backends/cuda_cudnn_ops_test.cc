// The CUDA backend's cuDNN convolutions (Convolution::kCudnn) against the CPU backend: the conv
// cases of the op suite (backend_ops_test.cc) and more shapes (1x1, 3x3, 5x5 and non-square
// kernels, strides 1 to 3, padding 0 to 2, channels 1 to 64), forward with and without bias for
// every activation, backward with and without dx and db for every fusable one, and the conv +
// max-pool op (whose default implementation hands cuDNN tensors at odd offsets of its
// workspace), to the op suite's tolerances; the same case twice gives the same bits; and a small
// CNN trains to the CPU's weights and losses. `col` is not compared: the cuDNN path leaves it
// unwritten.
//
// Tests that need a GPU and cuDNN skip ("no GPU or no cuDNN: <reason>") where there is none.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "training/backend.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cuda/cuda_backend.h"
#include "training/model_spec.h"
#include "training/optim/adam.h"
#include "training/optim/lr_schedule.h"
#include "training/rng.h"
#include "training/test_datasets.h"
#include "training/trainer.h"

namespace tuner::training {
namespace {

constexpr CudaBackendOptions kCudnnOptions{.convolution = Convolution::kCudnn};

#define SKIP_WITHOUT_CUDNN()                                                       \
  do {                                                                             \
    const std::string tuner_why_ = cudnn_unavailable(0);                           \
    if (!tuner_why_.empty()) GTEST_SKIP() << "no GPU or no cuDNN: " << tuner_why_; \
  } while (0)

// ---- Tolerances: the op suite's ----

struct Tolerance {
  double rtol, atol;  // |got - want| <= atol + rtol * |want|
};
constexpr Tolerance kElementwise{1e-5, 1e-6};
constexpr Tolerance kReduction{1e-4, 1e-5};
constexpr Tolerance kProduct{1e-4, 1e-4};
constexpr Tolerance kExact{0.0, 0.0};  // bit for bit

struct Output {
  std::string name;
  std::vector<float> values;
  Tolerance tol;
};

// Empty when got matches want within tol; else the count of bad elements and the worst one.
std::string compare(const Output& want, const Output& got, bool exact) {
  exact = exact || (want.tol.rtol == 0.0 && want.tol.atol == 0.0);
  std::ostringstream msg;
  if (want.values.size() != got.values.size()) {
    msg << want.name << ": " << got.values.size() << " values, want " << want.values.size();
    return msg.str();
  }
  size_t bad = 0, worst = 0;
  double worst_excess = -1.0;
  for (size_t i = 0; i < want.values.size(); ++i) {
    const float w = want.values[i], g = got.values[i];
    if (std::memcmp(&w, &g, sizeof w) == 0) continue;
    const double err = std::abs(static_cast<double>(g) - w);
    const double allowed = exact ? 0.0 : want.tol.atol + want.tol.rtol * std::abs(w);
    if (std::isfinite(err) && err <= allowed && !exact) continue;
    ++bad;
    const double excess = std::isfinite(err) ? err / std::max(allowed, 1e-300) : INFINITY;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (bad == 0) return "";
  msg.precision(9);
  msg << "output '" << want.name << "': " << bad << " of " << want.values.size()
      << " elements differ" << (exact ? " (must be bit-identical)" : "") << "; worst at [" << worst
      << "]: got " << got.values[worst] << ", want " << want.values[worst];
  return msg.str();
}

// Seeded inputs in one backend's memory, and the outputs a case records.
class Bench {
 public:
  explicit Bench(Backend& backend) : backend_(backend) {}
  Backend& backend() { return backend_; }

  Tensor random(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    Rng rng(seed);
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (float& x : v) x = rng.uniform(lo, hi);
    Tensor t = backend_.allocate(shape);
    backend_.upload(v, t.span());
    return t;
  }
  // Values in {-1, 0, 1}: the convolution's sums are exact, so pooling picks the same maxima.
  Tensor ternary(const Shape& shape, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (float& x : v) x = std::floor(rng.uniform(0.0f, 3.0f)) - 1.0f;
    Tensor t = backend_.allocate(shape);
    backend_.upload(v, t.span());
    return t;
  }
  Tensor zeros(const Shape& shape) { return backend_.allocate(shape); }
  void record(const std::string& name, const Tensor& t, Tolerance tol) {
    std::vector<float> host(static_cast<size_t>(t.numel()));
    backend_.download(t.span(), host);
    outputs_.push_back({name, std::move(host), tol});
  }
  const std::vector<Output>& outputs() const { return outputs_; }

 private:
  Backend& backend_;
  std::vector<Output> outputs_;
};

// ---- The cases ----

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
    std::ostringstream s;
    s << b << 'x' << c << 'x' << h << 'x' << w << "_o" << o << "_k" << win.kernel_h << 'x'
      << win.kernel_w << "_s" << win.stride << "_p" << win.padding;
    return s.str();
  }
};

// The op suite's geometries, then 1x1 / 5x5 / wide-channel ones and odd strides and paddings.
const ConvGeom kGeoms[] = {
    {3, 2, 7, 7, 4, {3, 3, 1, 1}},     {3, 2, 7, 7, 4, {3, 3, 2, 1}},
    {2, 3, 8, 6, 5, {2, 3, 2, 0}},     {2, 3, 5, 5, 6, {1, 1, 1, 0}},
    {2, 3, 9, 8, 5, {5, 5, 3, 2}},     {16, 1, 28, 28, 32, {3, 3, 1, 1}},
    {8, 32, 14, 14, 64, {3, 3, 1, 1}}, {4, 64, 7, 7, 64, {1, 1, 1, 0}},
    {3, 16, 12, 11, 8, {5, 5, 1, 2}},  {5, 64, 9, 9, 1, {3, 3, 2, 0}},
    {2, 1, 6, 6, 3, {1, 1, 2, 1}},     {4, 8, 10, 10, 16, {5, 5, 2, 0}},
};

const Activation kAllActs[] = {Activation::kNone, Activation::kRelu, Activation::kGelu,
                               Activation::kTanh, Activation::kSigmoid};

enum class Op { kForward, kBackward, kPoolForward, kPoolBackward };

struct ConvCase {
  std::string name;
  ConvGeom g;
  Activation act;
  Op op;
  bool with_bias;  // forward: a bias; backward: dx and db too (pool cases: always both)
};

// conv2d_pool_forward (and _backward), as the op suite runs them.
void run_pool_case(const ConvCase& k, Bench& b) {
  const ConvGeom& g = k.g;
  const Shape cs = g.y();
  const Shape pooled{g.b, g.o, cs[2] / 2, cs[3] / 2};
  Tensor x = b.ternary(g.x(), 71);
  Tensor w = b.ternary(g.w_shape(), 72);
  Tensor bias = b.ternary(Shape{g.o}, 73);
  Tensor y = b.zeros(pooled);
  Tensor argmax = b.zeros(pooled);
  std::span<int32_t> idx(reinterpret_cast<int32_t*>(argmax.data()),
                         static_cast<size_t>(argmax.numel()));
  Tensor work = b.zeros(Shape{b.backend().conv2d_pool_workspace(g.win, g.x(), g.o)});
  b.backend().conv2d_pool_forward(g.win, x, w, &bias, k.act, y, idx, work.span());
  if (k.op == Op::kPoolForward) {
    b.record("y", y, kProduct);
    b.record("argmax", argmax, kExact);  // int32 bit patterns
    return;
  }
  Tensor dy = b.random(pooled, 74);
  Tensor dx = b.zeros(g.x());
  Tensor dw = b.zeros(g.w_shape());
  Tensor db = b.zeros(Shape{g.o});
  b.backend().conv2d_pool_backward(g.win, x, w, y, idx, k.act, dy, &dx, dw, &db, work.span());
  b.record("dx", dx, kProduct);
  b.record("dw", dw, kProduct);
  b.record("db", db, kReduction);
}

void run_case(const ConvCase& k, Bench& b) {
  const ConvGeom& g = k.g;
  Backend& be = b.backend();
  if (k.op == Op::kPoolForward || k.op == Op::kPoolBackward) {
    run_pool_case(k, b);
    return;
  }
  if (k.op == Op::kForward) {
    Tensor x = b.random(g.x(), 31);
    Tensor w = b.random(g.w_shape(), 32, -0.3f, 0.3f);
    Tensor bias = b.random(Shape{g.o}, 33);
    Tensor col = b.zeros(g.col());
    Tensor y = b.zeros(g.y());
    be.conv2d_forward(g.win, x, w, k.with_bias ? &bias : nullptr, k.act, col, y);
    b.record("y", y, kProduct);
    return;
  }
  Tensor x = b.random(g.x(), 41);
  Tensor w = b.random(g.w_shape(), 42, -0.3f, 0.3f);
  Tensor bias = b.random(Shape{g.o}, 43);
  Tensor col = b.zeros(g.col());
  Tensor forward_y = b.zeros(g.y());
  be.conv2d_forward(g.win, x, w, &bias, k.act, col, forward_y);
  // y = act(z) for a random z (as the op suite does): act'(y) must not hang on the forward's
  // precision.
  Tensor z = b.random(g.y(), 45);
  Tensor y = b.zeros(g.y());
  be.activation_forward(k.act, z, y);
  Tensor dy = b.random(g.y(), 44);
  Tensor dz = b.zeros(g.y());
  Tensor dx = b.zeros(g.x());
  Tensor dw = b.zeros(g.w_shape());
  Tensor db = b.zeros(Shape{g.o});
  Tensor work =
      b.zeros(Shape{std::max<int64_t>(be.conv2d_backward_workspace(g.win, g.x(), g.o), 1)});
  be.conv2d_backward(g.win, x, w, col, y, k.act, dy, dz, k.with_bias ? &dx : nullptr, dw,
                     k.with_bias ? &db : nullptr, work.span());
  if (k.act != Activation::kNone) b.record("dz", dz, kElementwise);
  if (k.with_bias) b.record("dx", dx, kProduct);
  b.record("dw", dw, kProduct);
  if (k.with_bias) b.record("db", db, kReduction);
}

std::vector<ConvCase> all_cases() {
  std::vector<ConvCase> cases;
  for (const ConvGeom& g : kGeoms) {
    for (Activation act : kAllActs) {
      const std::string tag = std::string(activation_name(act)) + "_" + g.tag();
      for (int with_bias = 0; with_bias < 2; ++with_bias) {
        cases.push_back(
            {"forward_" + tag + (with_bias ? "_bias" : ""), g, act, Op::kForward, with_bias == 1});
      }
      if (!activation_fusable(act)) continue;  // the backward takes act' from the output
      for (int full = 0; full < 2; ++full) {
        cases.push_back(
            {"backward_" + tag + (full ? "_dx_db" : ""), g, act, Op::kBackward, full == 1});
      }
      // The conv + pool op, where the pooled extent is at least 1x1.
      if (g.y()[2] < 2 || g.y()[3] < 2) continue;
      cases.push_back({"pool_forward_" + tag, g, act, Op::kPoolForward, true});
      cases.push_back({"pool_backward_" + tag, g, act, Op::kPoolBackward, true});
    }
  }
  return cases;
}

const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> kCases = all_cases();
  return kCases;
}

// One kCudnn backend for every case (made at the first): some hundred cuDNN handles would cost
// more than the cases, and the shape cache then serves many shapes in turn. Never destroyed
// (Google style's rule for statics): its teardown would race the CUDA runtime's at exit.
Backend& shared_cudnn_backend() {
  static Backend* const kBackend = make_cuda_backend(0, kCudnnOptions).release();
  return *kBackend;
}

class CudnnConvOps : public ::testing::TestWithParam<size_t> {
 protected:
  const ConvCase& op() const { return cases()[GetParam()]; }
};

TEST_P(CudnnConvOps, MatchesCpu) {
  SKIP_WITHOUT_CUDNN();
  std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  Backend* dev = &shared_cudnn_backend();
  Bench want(*cpu), got(*dev);
  run_case(op(), want);
  run_case(op(), got);
  ASSERT_EQ(want.outputs().size(), got.outputs().size());
  for (size_t i = 0; i < want.outputs().size(); ++i) {
    const std::string diff = compare(want.outputs()[i], got.outputs()[i], false);
    EXPECT_TRUE(diff.empty()) << op().name << " on " << dev->name() << " vs cpu: " << diff;
  }
}

// Same inputs, same backend: bit-identical outputs (deterministic algorithms only).
TEST_P(CudnnConvOps, IsDeterministic) {
  SKIP_WITHOUT_CUDNN();
  Backend* dev = &shared_cudnn_backend();
  Bench first(*dev), second(*dev);
  run_case(op(), first);
  run_case(op(), second);
  ASSERT_EQ(first.outputs().size(), second.outputs().size());
  for (size_t i = 0; i < first.outputs().size(); ++i) {
    const std::string diff = compare(first.outputs()[i], second.outputs()[i], true);
    EXPECT_TRUE(diff.empty()) << op().name << " run twice: " << diff;
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string name = cases()[info.param].name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Conv, CudnnConvOps, ::testing::Range(size_t{0}, cases().size()),
                         case_name);

// ---- Options ----

// Refused on every machine, before any device is looked at.
TEST(CudnnOptions, Bf16ProductsAreRefused) {
  const CudaBackendOptions bf16{.matmul = Precision::kBfloat16, .convolution = Convolution::kCudnn};
  EXPECT_NE(cuda_options_invalid(bf16), "");
  EXPECT_EQ(cuda_options_invalid(kCudnnOptions), "");
  EXPECT_EQ(cuda_options_invalid({.matmul = Precision::kBfloat16}), "");
  EXPECT_THROW(make_cuda_backend(0, bf16), std::invalid_argument);
}

TEST(CudnnOptions, UnavailableReasonIsEmptyOrExplains) {
  const std::string why = cudnn_unavailable(0);
  if (why.empty()) {
    std::unique_ptr<Backend> dev = make_cuda_backend(0, kCudnnOptions);
    EXPECT_EQ(dev->name(), "cuda-cudnn");
    return;
  }
  try {
    make_cuda_backend(0, kCudnnOptions);
    ADD_FAILURE() << "made a cuDNN backend although: " << why;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

// ---- A whole model ----

// Two convolutions (one fused with its max pooling, one strided with a non-fusable activation)
// and the layers around them, trained with Adam; 100 samples in batches of 16 end on a short one.
constexpr const char* kCnnSpec = R"({"input": [1, 8, 8], "layers": [
    {"type": "conv2d", "out": 6, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2},
    {"type": "conv2d", "out": 8, "kernel": 3, "stride": 2, "padding": 1, "activation": "gelu"},
    {"type": "conv2d", "out": 8, "kernel": 1}, {"type": "tanh"},
    {"type": "flatten"}, {"type": "linear", "out": 16}, {"type": "relu"},
    {"type": "linear", "out": 4}]})";

struct CnnRun {
  CnnRun(Backend& b, const Dataset& train, const Dataset& val)
      : spec(parse_model_spec(kCnnSpec)),
        model(build_model(spec, 16, b, 3)),
        adam(b, static_cast<int64_t>(model->parameters().values().size()), AdamOptions{}),
        lr(3e-3),
        trainer(*model, adam, lr, train, val, {.epochs = 3, .batch_size = 16, .seed = 4}) {}
  ModelSpec spec;
  std::unique_ptr<Sequential> model;
  Adam adam;
  ConstantLr lr;
  Trainer trainer;
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return worst;
}

TEST(CudnnModel, CnnTrainsToTheCpuWeightsAndLossesReproducibly) {
  SKIP_WITHOUT_CUDNN();
  const Dataset train = quadrant_images(100, 1), val = quadrant_images(48, 2);
  CpuBackend cpu(1);
  std::unique_ptr<Backend> gpu = make_cuda_backend(0, kCudnnOptions);
  CnnRun on_cpu(cpu, train, val), on_gpu(*gpu, train, val);
  const TrainResult c = on_cpu.trainer.run(), g = on_gpu.trainer.run();
  ASSERT_EQ(c.history.size(), g.history.size());
  for (size_t e = 0; e < c.history.size(); ++e) {
    EXPECT_NEAR(g.history[e].train_loss, c.history[e].train_loss, 2e-3) << "epoch " << e;
    EXPECT_NEAR(g.history[e].val_loss, c.history[e].val_loss, 2e-3) << "epoch " << e;
  }
  const std::vector<float> w_gpu = on_gpu.model->parameters().values_to_host();
  EXPECT_LT(max_abs_diff(w_gpu, on_cpu.model->parameters().values_to_host()), 2e-3);
  CnnRun again(*gpu, train, val);
  again.trainer.run();
  EXPECT_EQ(again.model->parameters().values_to_host(), w_gpu) << "a second run changed bits";
}

}  // namespace
}  // namespace tuner::training
