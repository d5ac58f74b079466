#include "training/backends/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "training/backends/cpu/dnnl_conv.h"
#include "training/backends/cpu/dnnl_matmul.h"
#include "training/rng.h"

namespace tuner::training {
namespace {

void fill(Tensor& t, uint64_t seed) {
  Rng rng(seed);
  for (float& v : t.span()) v = rng.uniform(-1.0f, 1.0f);
}

// The reference product c = alpha * op(a) op(b) + beta * c, in double.
std::vector<double> naive(bool ta, bool tb, float alpha, const Tensor& a, const Tensor& b,
                          float beta, const Tensor& c) {
  const int64_t m = c.dim(0), n = c.dim(1), k = ta ? a.dim(0) : a.dim(1);
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        acc += static_cast<double>(ta ? a.at({p, i}) : a.at({i, p})) *
               (tb ? b.at({j, p}) : b.at({p, j}));
      }
      out[i * n + j] = alpha * acc + beta * static_cast<double>(c.at({i, j}));
    }
  }
  return out;
}

class GemmTest : public ::testing::TestWithParam<int> {};

TEST_P(GemmTest, AllTransposesMatchTheReference) {
  CpuBackend backend(GetParam());
  for (int shape = 0; shape < 2; ++shape) {
    // Tall (split by rows) and wide (split by columns) outputs.
    const int64_t m = shape == 0 ? 37 : 5, n = shape == 0 ? 6 : 41, k = 13;
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      Tensor a(ta ? Shape{k, m} : Shape{m, k});
      Tensor b(tb ? Shape{n, k} : Shape{k, n});
      Tensor c(Shape{m, n});
      fill(a, 1);
      fill(b, 2);
      fill(c, 3);
      const auto want = naive(ta, tb, 0.5f, a, b, 2.0f, c);
      backend.gemm(ta ? Transpose::kYes : Transpose::kNo, tb ? Transpose::kYes : Transpose::kNo,
                   0.5f, a, b, 2.0f, c);
      for (int64_t i = 0; i < m * n; ++i) {
        ASSERT_NEAR(c.data()[i], want[i], 1e-4) << "ta=" << ta << " tb=" << tb << " i=" << i;
      }
    }
  }
}

TEST_P(GemmTest, FusedLinearEqualsGemmThenBiasThenRelu) {
  CpuBackend backend(GetParam());
  for (int64_t batch : {3, 64}) {
    Tensor x(Shape{batch, 20}), w(Shape{9, 20}), bias(Shape{9}), y(Shape{batch, 9});
    fill(x, 4);
    fill(w, 5);
    fill(bias, 6);
    backend.linear_forward(x, w, &bias, Activation::kRelu, y);
    Tensor ref(Shape{batch, 9});
    backend.gemm(Transpose::kNo, Transpose::kYes, 1.0f, x, w, 0.0f, ref);
    for (int64_t i = 0; i < batch; ++i) {
      for (int64_t j = 0; j < 9; ++j) {
        const float want = std::max(0.0f, ref.at({i, j}) + bias.at({j}));
        ASSERT_NEAR(y.at({i, j}), want, 1e-5);
      }
    }
  }
}

// linear_backward splits dx by rows or by input features, whichever operand is larger; both must
// equal the products composed from gemm.
TEST_P(GemmTest, LinearBackwardEqualsGemms) {
  CpuBackend backend(GetParam());
  for (int64_t batch : {3, 64}) {
    for (Activation act : {Activation::kNone, Activation::kRelu}) {
      Tensor x(Shape{batch, 20}), w(Shape{9, 20}), y(Shape{batch, 9}), dy(Shape{batch, 9});
      fill(x, 7);
      fill(w, 8);
      fill(y, 9);
      fill(dy, 10);
      Tensor dz(Shape{batch, 9}), dx(Shape{batch, 20}), dw(Shape{9, 20}), db(Shape{9});
      backend.linear_backward(x, w, y, act, dy, dz, &dx, dw, &db);
      Tensor g(Shape{batch, 9});
      for (int64_t i = 0; i < g.numel(); ++i) {
        const bool pass = act == Activation::kNone || y.data()[i] > 0.0f;
        g.data()[i] = pass ? dy.data()[i] : 0.0f;
      }
      Tensor want_dx(Shape{batch, 20}), want_dw(Shape{9, 20});
      backend.gemm(Transpose::kNo, Transpose::kNo, 1.0f, g, w, 0.0f, want_dx);
      backend.gemm(Transpose::kYes, Transpose::kNo, 1.0f, g, x, 0.0f, want_dw);
      for (int64_t i = 0; i < dx.numel(); ++i) ASSERT_NEAR(dx.data()[i], want_dx.data()[i], 1e-5);
      for (int64_t i = 0; i < dw.numel(); ++i) ASSERT_NEAR(dw.data()[i], want_dw.data()[i], 1e-5);
      for (int64_t o = 0; o < 9; ++o) {
        double sum = 0.0;
        for (int64_t r = 0; r < batch; ++r) sum += g.at({r, o});
        ASSERT_NEAR(db.at({o}), sum, 1e-5);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, GemmTest, ::testing::Values(1, 2, 3));

// The Adam step is vectorized: the vector body and the scalar remainder (whose place moves with
// the thread count) must give the same bits, and both must follow torch.optim.Adam.
TEST(CpuBackend, AdamStepDoesNotDependOnThreadCountAndMatchesTheReference) {
  const size_t n = 100003;
  for (bool decoupled : {false, true}) {
    const AdamStepArgs args{.lr = 1e-2f, .weight_decay = 0.1f, .decoupled = decoupled, .step = 3};
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2, 3}) {
      CpuBackend backend(threads);
      std::vector<float> p(n), g(n), m(n), v(n);
      for (size_t i = 0; i < n; ++i) {
        p[i] = std::sin(static_cast<float>(i));
        g[i] = std::cos(static_cast<float>(i) * 0.7f);
        m[i] = 0.1f * g[i];
        v[i] = 0.01f * g[i] * g[i];
      }
      backend.adam_step(args, p, g, m, v);
      results.push_back(p);
      if (threads != 1) continue;
      // The reference in double, from the same starting values.
      for (size_t i = 0; i < n; i += 997) {
        const double p0 = std::sin(static_cast<float>(i));
        double gi = std::cos(static_cast<float>(i) * 0.7f);
        const double m0 = 0.1f * static_cast<float>(gi), v0 = 0.01f * static_cast<float>(gi * gi);
        if (!decoupled) gi += 0.1 * p0;
        const double mi = 0.9 * m0 + 0.1 * gi, vi = 0.999 * v0 + 0.001 * gi * gi;
        const double denom = std::sqrt(vi) / std::sqrt(1.0 - std::pow(0.999, 3)) + 1e-8;
        const double decay = decoupled ? 1.0 - 1e-2 * 0.1 : 1.0;
        const double want = p0 * decay - 1e-2 / (1.0 - std::pow(0.9, 3)) * mi / denom;
        ASSERT_NEAR(p[i], want, 1e-5) << "decoupled=" << decoupled << " i=" << i;
      }
    }
    for (size_t t = 1; t < results.size(); ++t) {
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(results[0][i], results[t][i]) << "decoupled=" << decoupled << " i=" << i;
      }
    }
  }
}

TEST(CpuBackend, SumSquaresIsDeterministicAndExact) {
  std::vector<float> x(100001);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 10) * 0.5f;
  double want = 0.0;
  for (float v : x) want += static_cast<double>(v) * v;
  for (int threads : {1, 2, 4}) {
    CpuBackend backend(threads);
    EXPECT_DOUBLE_EQ(backend.sum_squares(x), want) << threads;
  }
}

TEST(CpuBackend, DropoutMaskDoesNotDependOnThreadCount) {
  Tensor x(Shape{50000});
  x.fill(1.0f);
  Tensor m1(x.shape()), m2(x.shape()), y(x.shape());
  CpuBackend one(1), three(3);
  one.dropout_forward(0.25f, 42, x, m1, y);
  three.dropout_forward(0.25f, 42, x, m2, y);
  int64_t dropped = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(m1.data()[i], m2.data()[i]);
    dropped += m1.data()[i] == 0.0f;
    if (m1.data()[i] != 0.0f) {
      ASSERT_FLOAT_EQ(m1.data()[i], 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(static_cast<double>(dropped) / x.numel(), 0.25, 0.01);
}

struct ConvCase {
  int64_t b, c, h, w, o;
  Window2d win;
};

// im2col copies whole blocks when a window keeps the width (stride 1, OW == W) and goes row by
// row otherwise: both must give the unfolded input and the output of a direct convolution.
TEST(CpuBackend, Conv2dForwardMatchesDirectConvolution) {
  const ConvCase cases[] = {{2, 3, 6, 5, 4, {3, 3, 1, 1}}, {2, 2, 7, 7, 3, {5, 5, 1, 2}},
                            {1, 2, 6, 6, 2, {3, 3, 1, 0}}, {2, 2, 5, 6, 3, {3, 3, 1, 2}},
                            {2, 3, 4, 4, 2, {1, 1, 1, 0}}, {2, 2, 7, 6, 3, {3, 3, 2, 1}},
                            {3, 1, 4, 3, 2, {3, 3, 1, 1}}};
  for (int threads : {1, 2}) {
    CpuBackend backend(threads);
    for (const ConvCase& k : cases) {
      const Window2d& win = k.win;
      const int64_t oh = win.out_h(k.h), ow = win.out_w(k.w);
      const int64_t kk = win.kernel_h * win.kernel_w;
      Tensor x(Shape{k.b, k.c, k.h, k.w}), w(Shape{k.o, k.c, win.kernel_h, win.kernel_w});
      Tensor bias(Shape{k.o}), col(Shape{k.b, k.c * kk, oh * ow}), y(Shape{k.b, k.o, oh, ow});
      fill(x, 11);
      fill(w, 12);
      fill(bias, 13);
      backend.conv2d_forward(win, x, w, &bias, Activation::kRelu, col, y);
      for (int64_t b = 0; b < k.b; ++b) {
        for (int64_t i = 0; i < oh; ++i) {
          for (int64_t j = 0; j < ow; ++j) {
            std::vector<double> acc(static_cast<size_t>(k.o));
            for (int64_t o = 0; o < k.o; ++o) acc[o] = bias.at({o});
            for (int64_t c = 0; c < k.c; ++c) {
              for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
                for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
                  const int64_t ih = i * win.stride - win.padding + kh;
                  const int64_t iw = j * win.stride - win.padding + kw;
                  const bool inside = ih >= 0 && ih < k.h && iw >= 0 && iw < k.w;
                  const float v = inside ? x.at({b, c, ih, iw}) : 0.0f;
                  const int64_t r = (c * win.kernel_h + kh) * win.kernel_w + kw;
                  ASSERT_EQ(col.at({b, r, i * ow + j}), v)
                      << "case " << (&k - cases) << " threads " << threads << " b " << b << " row "
                      << r << " i " << i << " j " << j;
                  for (int64_t o = 0; o < k.o; ++o)
                    acc[o] += static_cast<double>(w.at({o, c, kh, kw})) * v;
                }
              }
            }
            for (int64_t o = 0; o < k.o; ++o) {
              ASSERT_NEAR(y.at({b, o, i, j}), std::max(0.0, acc[o]), 1e-5)
                  << "case " << (&k - cases) << " threads " << threads;
            }
          }
        }
      }
    }
  }
}

// The value a bf16 product reads for v: v itself in fp32, v rounded to bf16 (nearest, ties to
// even) with bf16 products.
double product_input(float v, bool bf16) {
  if (!bf16) return v;
  uint16_t r;
  cpu::round_to_bf16(&v, 1, 1, 0, &r);
  return std::bit_cast<float>(static_cast<uint32_t>(r) << 16);
}

// conv2d_forward and conv2d_backward against the definition, in double, on both of the
// backend's paths (oneDNN's primitives from kMinDnnlConvChannels input channels and kernels
// larger than 1x1, im2col + GEMM otherwise): strides, paddings, rectangular and 5x5 kernels,
// channel counts that are no multiple of oneDNN's blocks, batches that leave threads without a
// sample, a stride that leaves too little of `col` to keep x for the backward, a padding as wide
// as the kernel; in fp32 and, where the CPU has them, with bf16 products (the definition then
// reads x, w and dz rounded to bf16).
TEST(CpuBackend, Conv2dMatchesTheDefinitionOnEveryPath) {
  const ConvCase cases[] = {{5, 8, 9, 9, 16, {3, 3, 1, 1}},    {2, 16, 10, 11, 8, {3, 3, 2, 1}},
                            {3, 12, 12, 12, 20, {5, 5, 1, 2}}, {2, 32, 7, 7, 32, {3, 3, 1, 0}},
                            {1, 16, 6, 8, 4, {2, 3, 1, 1}},    {2, 16, 8, 8, 32, {1, 1, 2, 0}},
                            {3, 3, 8, 8, 16, {3, 3, 1, 1}},    {2, 8, 9, 9, 8, {2, 2, 3, 0}},
                            {2, 8, 5, 5, 4, {3, 3, 2, 3}}};
  std::vector<Precision> precisions{Precision::kFloat32};
  if (cpu_bf16_unavailable().empty()) precisions.push_back(Precision::kBfloat16);
  for (Precision precision : precisions) {
    const bool bf16 = precision == Precision::kBfloat16;
    for (int threads : {1, 2, 3}) {
      CpuBackend backend(threads, precision);
      for (const ConvCase& k : cases) {
        const Window2d& win = k.win;
        SCOPED_TRACE(
            "case " + std::to_string(&k - cases) + ", threads " + std::to_string(threads) +
            (bf16 ? ", bf16" : ", fp32") +
            (cpu::dnnl_conv_suits(k.c, win.kernel_h, win.kernel_w) ? ", oneDNN" : ", im2col"));
        const int64_t oh = win.out_h(k.h), ow = win.out_w(k.w);
        const Shape x_shape{k.b, k.c, k.h, k.w}, w_shape{k.o, k.c, win.kernel_h, win.kernel_w};
        const Shape y_shape{k.b, k.o, oh, ow};
        Tensor x(x_shape), w(w_shape), bias(Shape{k.o}), dy(y_shape);
        Tensor col(Shape{k.b, k.c * win.kernel_h * win.kernel_w, oh * ow}), y(y_shape);
        Tensor dz(y_shape), dx(x_shape), dw(w_shape), db(Shape{k.o});
        fill(x, 51);
        fill(w, 52);
        fill(bias, 53);
        fill(dy, 54);
        backend.conv2d_forward(win, x, w, &bias, Activation::kRelu, col, y);
        std::vector<float> work(
            static_cast<size_t>(backend.conv2d_backward_workspace(win, x_shape, k.o)));
        backend.conv2d_backward(win, x, w, col, y, Activation::kRelu, dy, dz, &dx, dw, &db, work);
        {
          // A second backend of the thread count gives the same bits (a fresh cache of
          // primitives and scratch).
          CpuBackend again(threads, precision);
          Tensor col2(col.shape()), y2(y_shape), dz2(y_shape), dx2(x_shape), dw2(w_shape);
          Tensor db2(Shape{k.o});
          again.conv2d_forward(win, x, w, &bias, Activation::kRelu, col2, y2);
          again.conv2d_backward(win, x, w, col2, y2, Activation::kRelu, dy, dz2, &dx2, dw2, &db2,
                                work);
          for (const auto& [a, b] : {std::pair{&y, &y2}, {&dx, &dx2}, {&dw, &dw2}, {&db, &db2}}) {
            ASSERT_EQ(0, std::memcmp(a->data(), b->data(), a->numel() * sizeof(float)));
          }
        }
        // The definition: y = relu(conv + bias); dz = dy * relu'(y), then its gradients.
        std::vector<double> want_dx(static_cast<size_t>(x.numel()), 0.0);
        std::vector<double> want_dw(static_cast<size_t>(w.numel()), 0.0);
        std::vector<double> want_db(static_cast<size_t>(k.o), 0.0);
        for (int64_t b = 0; b < k.b; ++b) {
          for (int64_t o = 0; o < k.o; ++o) {
            for (int64_t i = 0; i < oh; ++i) {
              for (int64_t j = 0; j < ow; ++j) {
                double acc = bias.at({o});
                for (int64_t c = 0; c < k.c; ++c) {
                  for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
                    for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
                      const int64_t ih = i * win.stride - win.padding + kh;
                      const int64_t iw = j * win.stride - win.padding + kw;
                      if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                      acc += product_input(w.at({o, c, kh, kw}), bf16) *
                             product_input(x.at({b, c, ih, iw}), bf16);
                    }
                  }
                }
                const float got = y.at({b, o, i, j});
                ASSERT_NEAR(got, std::max(0.0, acc), 2e-4 + 2e-4 * std::abs(acc))
                    << "y " << b << "," << o << "," << i << "," << j;
                // The backward from the backend's own y, whose relu' the definition shares.
                const float g = got > 0.0f ? dy.at({b, o, i, j}) : 0.0f;
                ASSERT_EQ(dz.at({b, o, i, j}), g);
                want_db[o] += g;
                const double gp = product_input(g, bf16);
                for (int64_t c = 0; c < k.c; ++c) {
                  for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
                    for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
                      const int64_t ih = i * win.stride - win.padding + kh;
                      const int64_t iw = j * win.stride - win.padding + kw;
                      if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                      want_dx[((b * k.c + c) * k.h + ih) * k.w + iw] +=
                          gp * product_input(w.at({o, c, kh, kw}), bf16);
                      want_dw[((o * k.c + c) * win.kernel_h + kh) * win.kernel_w + kw] +=
                          gp * product_input(x.at({b, c, ih, iw}), bf16);
                    }
                  }
                }
              }
            }
          }
        }
        auto expect_near = [](const char* name, const Tensor& got,
                              const std::vector<double>& want) {
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_NEAR(got.data()[i], want[i], 2e-4 + 2e-4 * std::abs(want[i]))
                << name << " " << i;
          }
        };
        expect_near("dx", dx, want_dx);
        expect_near("dw", dw, want_dw);
        expect_near("db", db, want_db);
      }
    }
  }
}

// The 2x2 stride-2 max-pool has paths of its own (forward; backward on even planes): the same
// maxima, argmax (the first maximum in window order wins ties) and gradients as the definition.
TEST(CpuBackend, MaxPool2x2MatchesTheDefinition) {
  const Window2d win{2, 2, 2, 0};
  // Widths below, at and above the eight windows that the vector path takes at a time.
  const std::pair<int64_t, int64_t> sizes[] = {{4, 6}, {5, 7}, {6, 14}, {4, 16}, {5, 35}, {6, 28}};
  for (const auto& [h, w] : sizes) {
    Tensor x(Shape{2, 3, h, w});
    Rng rng(21);
    for (float& v : x.span()) v = std::floor(rng.uniform(0.0f, 3.0f));  // many ties
    const int64_t oh = win.out_h(h), ow = win.out_w(w);
    Tensor y(Shape{2, 3, oh, ow}), dy(Shape{2, 3, oh, ow}), dx(x.shape());
    fill(dy, 22);
    std::vector<int32_t> argmax(static_cast<size_t>(y.numel()));
    CpuBackend backend(2);
    backend.max_pool2d_forward(win, x, y, argmax);
    backend.max_pool2d_backward(win, argmax, dy, dx);
    std::vector<float> want_dx(static_cast<size_t>(x.numel()), 0.0f);
    for (int64_t p = 0; p < 6; ++p) {
      const float* plane = x.data() + p * h * w;
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          int32_t at = static_cast<int32_t>(2 * i * w + 2 * j);
          for (int64_t kh = 0; kh < 2; ++kh) {
            for (int64_t kw = 0; kw < 2; ++kw) {
              const int32_t here = static_cast<int32_t>((2 * i + kh) * w + 2 * j + kw);
              if (plane[here] > plane[at]) at = here;
            }
          }
          const int64_t out = p * oh * ow + i * ow + j;
          ASSERT_EQ(argmax[out], at)
              << "h " << h << " w " << w << " plane " << p << " i " << i << " j " << j;
          ASSERT_EQ(y.data()[out], plane[at]);
          want_dx[p * h * w + at] += dy.data()[out];
        }
      }
    }
    for (int64_t i = 0; i < x.numel(); ++i)
      ASSERT_EQ(dx.data()[i], want_dx[i]) << "h " << h << " w " << w << " i " << i;
  }
}

TEST(CpuBackend, AvgPoolMatchesTheDefinitionOnEveryPath) {
  struct Case {
    int64_t h, w;
    Window2d win;
  };
  // Windows that tile the plane (2 and 3, with rows and columns left over past the last window),
  // and the general loop's cases: overlapping, padded.
  const Case cases[] = {{6, 8, {2, 2, 2, 0}},   {7, 9, {2, 2, 2, 0}}, {9, 8, {3, 3, 3, 0}},
                        {11, 10, {3, 3, 3, 0}}, {7, 7, {3, 3, 2, 1}}, {6, 5, {3, 3, 1, 1}}};
  for (const Case& c : cases) {
    const int64_t oh = c.win.out_h(c.h), ow = c.win.out_w(c.w), k = c.win.kernel_h;
    Tensor x(Shape{2, 3, c.h, c.w}), y(Shape{2, 3, oh, ow}), dy(Shape{2, 3, oh, ow});
    Tensor dx(x.shape());
    fill(x, 31);
    fill(dy, 32);
    fill(dx, 33);  // the backward writes every element, those outside all windows too
    CpuBackend backend(2);
    backend.avg_pool2d_forward(c.win, x, y);
    backend.avg_pool2d_backward(c.win, dy, dx);
    // The definition, summed in window order from 0 as the kernels are: the same bits.
    const float inv = 1.0f / static_cast<float>(k * k);
    std::vector<float> want_dx(static_cast<size_t>(x.numel()), 0.0f);
    for (int64_t p = 0; p < 6; ++p) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t out = p * oh * ow + i * ow + j;
          float acc = 0.0f;
          for (int64_t kh = 0; kh < k; ++kh) {
            for (int64_t kw = 0; kw < k; ++kw) {
              const int64_t ih = i * c.win.stride - c.win.padding + kh;
              const int64_t iw = j * c.win.stride - c.win.padding + kw;
              if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
              acc += x.data()[p * c.h * c.w + ih * c.w + iw];
              want_dx[p * c.h * c.w + ih * c.w + iw] += dy.data()[out] * inv;
            }
          }
          ASSERT_EQ(y.data()[out], acc * inv) << c.h << "x" << c.w << " k" << k << " i " << i;
        }
      }
    }
    for (int64_t i = 0; i < x.numel(); ++i) {
      ASSERT_EQ(dx.data()[i], want_dx[i]) << c.h << "x" << c.w << " k" << k << " at " << i;
    }
  }
}

// act'(z) from the activation's output y = act(z), in double.
double act_grad(Activation act, double y) {
  switch (act) {
    case Activation::kRelu:
      return y > 0.0 ? 1.0 : 0.0;
    case Activation::kTanh:
      return 1.0 - y * y;
    case Activation::kSigmoid:
      return y * (1.0 - y);
    default:
      return 1.0;
  }
}

// The fused conv2d_pool_* kernels against the base class's pair (conv2d_*, then max_pool2d_*):
// the same pooled values and argmax bit for bit; and their gradients against the definition
// (the pooled gradient times act' at each window's maximum, folded back through the
// convolution), in double. Covers whole and partial 8-window rows, odd convolution outputs (whose
// last row and column no window covers), strides and thread counts, on both of the backend's
// paths (im2col, and oneDNN's convolutions from 8 input channels).
TEST(CpuBackend, Conv2dPoolMatchesConvThenPoolAndTheDefinition) {
  struct Case {
    int64_t b, c, h, w, o;
    Window2d win;
    Activation act;
  };
  const Case cases[] = {{3, 1, 28, 28, 4, {3, 3, 1, 1}, Activation::kRelu},
                        {4, 5, 14, 14, 6, {3, 3, 1, 1}, Activation::kRelu},
                        {2, 3, 9, 7, 4, {3, 3, 1, 1}, Activation::kTanh},
                        {2, 2, 11, 10, 3, {3, 3, 2, 1}, Activation::kSigmoid},
                        {3, 2, 6, 6, 3, {1, 1, 1, 0}, Activation::kNone},
                        // On oneDNN: more samples than a thread's chunk, odd and strided planes.
                        {19, 8, 14, 14, 16, {3, 3, 1, 1}, Activation::kRelu},
                        {3, 16, 9, 7, 8, {3, 3, 1, 1}, Activation::kTanh},
                        {2, 12, 11, 10, 6, {3, 3, 2, 1}, Activation::kSigmoid},
                        {4, 32, 8, 8, 32, {3, 3, 1, 1}, Activation::kNone}};
  for (int threads : {1, 2, 3}) {
    CpuBackend backend(threads);
    for (const Case& k : cases) {
      SCOPED_TRACE("case " + std::to_string(&k - cases) + ", threads " + std::to_string(threads));
      const Window2d& win = k.win;
      const int64_t oh = win.out_h(k.h), ow = win.out_w(k.w), ph = oh / 2, pw = ow / 2;
      const Shape x_shape{k.b, k.c, k.h, k.w}, w_shape{k.o, k.c, win.kernel_h, win.kernel_w};
      const Shape y_shape{k.b, k.o, ph, pw};
      Tensor x(x_shape), w(w_shape), bias(Shape{k.o}), dy(y_shape);
      fill(x, 31);
      fill(w, 32);
      fill(bias, 33);
      fill(dy, 34);
      auto ints = [](Tensor& t) {
        return std::span<int32_t>(reinterpret_cast<int32_t*>(t.data()),
                                  static_cast<size_t>(t.numel()));
      };
      // The pair, through the base class's implementation.
      Tensor y_pair(y_shape), arg_pair(y_shape);
      Tensor work_pair(Shape{backend.Backend::conv2d_pool_workspace(win, x_shape, k.o)});
      backend.Backend::conv2d_pool_forward(win, x, w, &bias, k.act, y_pair, ints(arg_pair),
                                           work_pair.span());
      // The fused kernels.
      Tensor y(y_shape), arg(y_shape);
      Tensor work(Shape{backend.conv2d_pool_workspace(win, x_shape, k.o)});
      backend.conv2d_pool_forward(win, x, w, &bias, k.act, y, ints(arg), work.span());
      for (int64_t i = 0; i < y.numel(); ++i) {
        ASSERT_EQ(y.data()[i], y_pair.data()[i]) << "y " << i;
        ASSERT_EQ(ints(arg)[i], ints(arg_pair)[i]) << "argmax " << i;
      }
      Tensor dx(x_shape), dw(w_shape), db(Shape{k.o});
      backend.conv2d_pool_backward(win, x, w, y, ints(arg), k.act, dy, &dx, dw, &db, work.span());
      // The definition: dz at each window's maximum, then the convolution's gradients.
      std::vector<double> dz(static_cast<size_t>(k.b * k.o * oh * ow), 0.0);
      for (int64_t p = 0; p < k.b * k.o; ++p) {
        for (int64_t q = 0; q < ph * pw; ++q) {
          const int64_t at = p * ph * pw + q;
          dz[p * oh * ow + ints(arg)[at]] = dy.data()[at] * act_grad(k.act, y.data()[at]);
        }
      }
      std::vector<double> want_dx(static_cast<size_t>(x.numel()), 0.0);
      std::vector<double> want_dw(static_cast<size_t>(w.numel()), 0.0);
      std::vector<double> want_db(static_cast<size_t>(k.o), 0.0);
      for (int64_t b = 0; b < k.b; ++b) {
        for (int64_t o = 0; o < k.o; ++o) {
          for (int64_t i = 0; i < oh; ++i) {
            for (int64_t j = 0; j < ow; ++j) {
              const double g = dz[((b * k.o + o) * oh + i) * ow + j];
              want_db[o] += g;
              for (int64_t c = 0; c < k.c; ++c) {
                for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
                  for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
                    const int64_t ih = i * win.stride - win.padding + kh;
                    const int64_t iw = j * win.stride - win.padding + kw;
                    if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                    want_dx[((b * k.c + c) * k.h + ih) * k.w + iw] += g * w.at({o, c, kh, kw});
                    want_dw[((o * k.c + c) * win.kernel_h + kh) * win.kernel_w + kw] +=
                        g * x.at({b, c, ih, iw});
                  }
                }
              }
            }
          }
        }
      }
      auto expect_near = [](const char* name, const Tensor& got, const std::vector<double>& want) {
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_NEAR(got.data()[i], want[i], 1e-4 + 1e-4 * std::abs(want[i])) << name << " " << i;
        }
      };
      expect_near("dx", dx, want_dx);
      expect_near("dw", dw, want_dw);
      expect_near("db", db, want_db);
    }
  }
}

}  // namespace
}  // namespace tuner::training
