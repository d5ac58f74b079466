#include "training/backends/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

}  // namespace
}  // namespace tuner::training
