#include "training/backends/cpu/cpu_backend.h"

#include <gtest/gtest.h>

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

INSTANTIATE_TEST_SUITE_P(Threads, GemmTest, ::testing::Values(1, 2, 3));

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
