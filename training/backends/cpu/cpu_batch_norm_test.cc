// The CPU backend's batch norm (cpu_batch_norm.cc) against its definition in double precision:
// planes shorter than, equal to and longer than a vector, with partial last vectors; batch 1;
// channel counts that are not a multiple of 16; [B, C] input; thread counts that do not divide the
// channels. The op suite (backend_ops_test) compares the other backends with this one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/rng.h"

namespace tuner::training {
namespace {

void fill(Tensor& t, uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  for (float& v : t.span()) v = rng.uniform(lo, hi);
}

int64_t spatial(const Shape& s) {
  int64_t n = 1;
  for (int i = 2; i < s.rank(); ++i) n *= s[i];
  return n;
}

// The batch statistics of channel c of x[B,C,S], in double, two passes.
struct Stats {
  double mean = 0, var = 0;  // biased variance
};
Stats channel_stats(const Tensor& x, int64_t c) {
  const int64_t b = x.dim(0), ch = x.dim(1), s = spatial(x.shape());
  double sum = 0;
  for (int64_t i = 0; i < b; ++i)
    for (int64_t k = 0; k < s; ++k) sum += x.data()[(i * ch + c) * s + k];
  const double mean = sum / static_cast<double>(b * s);
  double sq = 0;
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t k = 0; k < s; ++k) {
      const double d = x.data()[(i * ch + c) * s + k] - mean;
      sq += d * d;
    }
  }
  return {mean, sq / static_cast<double>(b * s)};
}

void expect_near_rel(double got, double want, double rtol, double atol, const std::string& what) {
  EXPECT_LE(std::fabs(got - want), atol + rtol * std::fabs(want))
      << what << ": got " << got << ", want " << want;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

struct Outputs {
  Tensor y, mean, rstd, running_mean, running_var, eval_y, dx, dgamma, dbeta;
};

Outputs run_all(int threads, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                const Tensor& dy) {
  const int64_t c = x.dim(1);
  CpuBackend backend(threads);
  Outputs o{Tensor(x.shape()), Tensor(Shape{c}), Tensor(Shape{c}),
            Tensor(Shape{c}),  Tensor(Shape{c}), Tensor(x.shape()),
            Tensor(x.shape()), Tensor(Shape{c}), Tensor(Shape{c})};
  fill(o.running_mean, 7, -1.0f, 1.0f);
  fill(o.running_var, 8, 0.5f, 2.0f);
  backend.batch_norm_forward_train(x, gamma, beta, 1e-5f, 0.1f, o.running_mean, o.running_var,
                                   o.mean, o.rstd, o.y);
  backend.batch_norm_forward_eval(x, gamma, beta, 1e-5f, o.running_mean, o.running_var, o.eval_y);
  backend.batch_norm_backward(x, gamma, o.mean, o.rstd, dy, &o.dx, o.dgamma, o.dbeta);
  return o;
}

TEST(CpuBatchNorm, MatchesTheDefinitionAndDoesNotDependOnTheThreadCount) {
  const Shape shapes[] = {{1, 19, 13, 11}, {3, 5, 7, 7},  {2, 16, 4, 4}, {4, 33, 5, 3},
                          {2, 3, 16, 17},  {5, 7, 1, 1},  {9, 21},       {64, 17, 3, 5},
                          {1, 2, 33, 1},   {2, 40, 8, 8}, {3, 4, 28, 28}};
  for (const Shape& shape : shapes) {
    SCOPED_TRACE("shape " + shape.to_string());
    const int64_t b = shape[0], ch = shape[1], s = spatial(shape), n = b * s;
    Tensor x(shape), dy(shape), gamma(Shape{ch}), beta(Shape{ch});
    fill(x, 1, -2.0f, 3.0f);
    fill(dy, 2, -1.0f, 1.0f);
    fill(gamma, 3, 0.5f, 1.5f);
    fill(beta, 4, -1.0f, 1.0f);
    const Outputs o = run_all(2, x, gamma, beta, dy);
    Tensor rm0(Shape{ch}), rv0(Shape{ch});
    fill(rm0, 7, -1.0f, 1.0f);
    fill(rv0, 8, 0.5f, 2.0f);
    for (int64_t c = 0; c < ch; ++c) {
      const Stats st = channel_stats(x, c);
      const double rstd = 1.0 / std::sqrt(st.var + 1e-5);
      const std::string at = " of channel " + std::to_string(c);
      expect_near_rel(o.mean.data()[c], st.mean, 1e-6, 1e-6, "mean" + at);
      expect_near_rel(o.rstd.data()[c], rstd, 1e-6, 0, "rstd" + at);
      const double unbiased = n > 1 ? st.var * static_cast<double>(n) / (n - 1) : st.var;
      expect_near_rel(o.running_mean.data()[c], 0.9 * rm0.data()[c] + 0.1 * st.mean, 1e-6, 1e-6,
                      "running_mean" + at);
      const double rv = 0.9 * rv0.data()[c] + 0.1 * unbiased;
      expect_near_rel(o.running_var.data()[c], rv, 1e-6, 1e-6, "running_var" + at);
      const double rm = o.running_mean.data()[c];
      const double eval_scale = gamma.data()[c] / std::sqrt(double{o.running_var.data()[c]} + 1e-5);
      double sum_dy = 0, sum_dy_xhat = 0;
      for (int64_t i = 0; i < b; ++i) {
        for (int64_t k = 0; k < s; ++k) {
          const int64_t e = (i * ch + c) * s + k;
          const double xhat = (x.data()[e] - st.mean) * rstd;
          sum_dy += dy.data()[e];
          sum_dy_xhat += dy.data()[e] * xhat;
        }
      }
      expect_near_rel(o.dbeta.data()[c], sum_dy, 1e-5, 1e-5, "dbeta" + at);
      expect_near_rel(o.dgamma.data()[c], sum_dy_xhat, 1e-5, 1e-5, "dgamma" + at);
      for (int64_t i = 0; i < b; ++i) {
        for (int64_t k = 0; k < s; ++k) {
          const int64_t e = (i * ch + c) * s + k;
          const double xhat = (x.data()[e] - st.mean) * rstd;
          const std::string where =
              at + ", sample " + std::to_string(i) + ", element " + std::to_string(k);
          expect_near_rel(o.y.data()[e], xhat * gamma.data()[c] + beta.data()[c], 1e-5, 1e-5,
                          "y" + where);
          expect_near_rel(o.eval_y.data()[e], (x.data()[e] - rm) * eval_scale + beta.data()[c],
                          1e-5, 1e-5, "eval y" + where);
          const double want_dx = gamma.data()[c] * rstd *
                                 (dy.data()[e] - sum_dy / static_cast<double>(n) -
                                  xhat * sum_dy_xhat / static_cast<double>(n));
          expect_near_rel(o.dx.data()[e], want_dx, 1e-4, 1e-5, "dx" + where);
        }
      }
    }
    if (::testing::Test::HasFailure()) return;
    // Each channel is one thread's, in one order: the same bits on any number of threads.
    for (int threads : {1, 3}) {
      const Outputs other = run_all(threads, x, gamma, beta, dy);
      EXPECT_TRUE(same_bits(o.y, other.y)) << threads << " threads: y";
      EXPECT_TRUE(same_bits(o.rstd, other.rstd)) << threads << " threads: rstd";
      EXPECT_TRUE(same_bits(o.eval_y, other.eval_y)) << threads << " threads: eval y";
      EXPECT_TRUE(same_bits(o.dx, other.dx)) << threads << " threads: dx";
      EXPECT_TRUE(same_bits(o.dgamma, other.dgamma)) << threads << " threads: dgamma";
    }
  }
}

// A channel whose mean is a million times its spread: the one-pass statistics must not lose the
// variance to E[x^2] - E[x]^2 (in double without a shift, rstd was off by 1e-4 here).
TEST(CpuBatchNorm, StatisticsHoldOnInputsFarFromZero) {
  const Shape shape{16, 3, 9, 9};
  Tensor x(shape);
  fill(x, 11, -1.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 81) % 3;
    x.data()[i] = static_cast<float>((c == 0 ? 1e6 : c == 1 ? -3e5 : 2e4) + 4.0 * x.data()[i]);
  }
  Tensor gamma(Shape{3}), beta(Shape{3}), dy(shape);
  fill(gamma, 3, 0.5f, 1.5f);
  fill(dy, 2, -1.0f, 1.0f);
  const Outputs o = run_all(2, x, gamma, beta, dy);
  Tensor rv0(Shape{3});
  fill(rv0, 8, 0.5f, 2.0f);  // as run_all's
  const int64_t n = 16 * 81;
  for (int64_t c = 0; c < 3; ++c) {
    const Stats st = channel_stats(x, c);
    const std::string at = " of channel " + std::to_string(c);
    expect_near_rel(o.mean.data()[c], st.mean, 1e-7, 0, "mean" + at);
    expect_near_rel(o.rstd.data()[c], 1.0 / std::sqrt(st.var + 1e-5), 1e-6, 0, "rstd" + at);
    const double unbiased = st.var * static_cast<double>(n) / (n - 1);
    expect_near_rel(o.running_var.data()[c], 0.9 * rv0.data()[c] + 0.1 * unbiased, 1e-6, 0,
                    "running_var" + at);
  }
}

// The one-pass batch norm + ReLU of the CPU backend against the base class's pair (batch norm,
// then the ReLU's own kernels), bit for bit: the same values, masked where the ReLU clips.
TEST(CpuBatchNorm, FusedReluIsBatchNormThenRelu) {
  for (const Shape& shape : {Shape{3, 19, 7, 5}, Shape{2, 16, 8, 8}, Shape{6, 5}}) {
    SCOPED_TRACE("shape " + shape.to_string());
    const int64_t ch = shape[1];
    Tensor x(shape), dy(shape), gamma(Shape{ch}), beta(Shape{ch});
    fill(x, 1, -2.0f, 3.0f);
    fill(dy, 2, -1.0f, 1.0f);
    fill(gamma, 3, 0.5f, 1.5f);
    fill(beta, 4, -1.0f, 1.0f);
    CpuBackend backend(2);
    struct Run {
      Tensor rm, rv, mean, rstd, y, eval_y, dx, dgamma, dbeta;
    };
    const auto make_run = [&] {
      Run r{Tensor(Shape{ch}), Tensor(Shape{ch}), Tensor(Shape{ch}),
            Tensor(Shape{ch}), Tensor(shape),     Tensor(shape),
            Tensor(shape),     Tensor(Shape{ch}), Tensor(Shape{ch})};
      fill(r.rv, 8, 0.5f, 2.0f);
      return r;
    };
    Run fused = make_run(), pair = make_run();
    std::vector<float> work(static_cast<size_t>(shape.numel()));
    backend.batch_norm_relu_forward_train(x, gamma, beta, 1e-5f, 0.1f, fused.rm, fused.rv,
                                          fused.mean, fused.rstd, fused.y);
    backend.Backend::batch_norm_relu_forward_train(x, gamma, beta, 1e-5f, 0.1f, pair.rm, pair.rv,
                                                   pair.mean, pair.rstd, pair.y);
    backend.batch_norm_relu_forward_eval(x, gamma, beta, 1e-5f, fused.rm, fused.rv, fused.eval_y);
    backend.Backend::batch_norm_relu_forward_eval(x, gamma, beta, 1e-5f, pair.rm, pair.rv,
                                                  pair.eval_y);
    backend.batch_norm_relu_backward(x, fused.y, gamma, fused.mean, fused.rstd, dy, &fused.dx,
                                     fused.dgamma, fused.dbeta, {});
    backend.Backend::batch_norm_relu_backward(x, pair.y, gamma, pair.mean, pair.rstd, dy, &pair.dx,
                                              pair.dgamma, pair.dbeta, work);
    int64_t clipped = 0;
    for (float v : fused.y.span()) clipped += v == 0.0f;
    EXPECT_GT(clipped, 0);  // the ReLU clips somewhere, so its mask is exercised
    EXPECT_TRUE(same_bits(fused.y, pair.y));
    EXPECT_TRUE(same_bits(fused.eval_y, pair.eval_y));
    EXPECT_TRUE(same_bits(fused.dx, pair.dx));
    EXPECT_TRUE(same_bits(fused.dgamma, pair.dgamma));
    EXPECT_TRUE(same_bits(fused.dbeta, pair.dbeta));
    EXPECT_GT(backend.Backend::batch_norm_relu_workspace(shape), 0);
    EXPECT_EQ(backend.batch_norm_relu_workspace(shape), 0);
  }
}

// The fused triple gives the bits of the ops in turn, for any thread count.
TEST(CpuBatchNorm, FusedReluAndMaxPoolAreTheThreeOpsInTurn) {
  // Odd extents (the last row and column are not pooled), planes shorter than a vector, channel
  // counts the thread counts do not divide.
  for (const Shape& shape : {Shape{3, 19, 7, 5}, Shape{2, 16, 8, 8}, Shape{4, 5, 6, 10},
                             Shape{5, 3, 2, 2}, Shape{2, 7, 12, 12}}) {
    const int64_t ch = shape[1];
    const Shape pooled{shape[0], ch, shape[2] / 2, shape[3] / 2};
    Tensor x(shape), dy(pooled), gamma(Shape{ch}), beta(Shape{ch});
    fill(x, 1, -2.0f, 3.0f);
    fill(dy, 2, -1.0f, 1.0f);
    fill(gamma, 3, 0.5f, 1.5f);
    fill(beta, 4, -2.0f, 0.0f);  // most windows clip somewhere, some wholly
    std::vector<float> one_thread_dx, one_thread_dgamma;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("shape " + shape.to_string() + ", " + std::to_string(threads) + " threads");
      CpuBackend backend(threads);
      struct Run {
        Tensor rm, rv, mean, rstd, y, dx, dgamma, dbeta;
        std::vector<int32_t> argmax;
        std::vector<float> work;
      };
      const auto make_run = [&](int64_t work) {
        Run r{Tensor(Shape{ch}),
              Tensor(Shape{ch}),
              Tensor(Shape{ch}),
              Tensor(Shape{ch}),
              Tensor(pooled),
              Tensor(shape),
              Tensor(Shape{ch}),
              Tensor(Shape{ch}),
              std::vector<int32_t>(static_cast<size_t>(pooled.numel())),
              std::vector<float>(static_cast<size_t>(work))};
        fill(r.rv, 8, 0.5f, 2.0f);
        return r;
      };
      Run fused = make_run(backend.batch_norm_relu_pool_workspace(shape));
      Run ops = make_run(backend.Backend::batch_norm_relu_pool_workspace(shape));
      backend.batch_norm_relu_pool_forward_train(x, gamma, beta, 1e-5f, 0.1f, fused.rm, fused.rv,
                                                 fused.mean, fused.rstd, fused.y, fused.argmax,
                                                 fused.work);
      backend.Backend::batch_norm_relu_pool_forward_train(x, gamma, beta, 1e-5f, 0.1f, ops.rm,
                                                          ops.rv, ops.mean, ops.rstd, ops.y,
                                                          ops.argmax, ops.work);
      backend.batch_norm_relu_pool_backward(x, fused.y, fused.argmax, gamma, fused.mean, fused.rstd,
                                            dy, &fused.dx, fused.dgamma, fused.dbeta, fused.work);
      backend.Backend::batch_norm_relu_pool_backward(x, ops.y, ops.argmax, gamma, ops.mean,
                                                     ops.rstd, dy, &ops.dx, ops.dgamma, ops.dbeta,
                                                     ops.work);
      int64_t clipped = 0;
      for (float v : fused.y.span()) clipped += v == 0.0f;
      EXPECT_GT(clipped, 0);  // some windows are all clipped: their gradient stops at the ReLU
      EXPECT_TRUE(same_bits(fused.y, ops.y));
      EXPECT_EQ(fused.argmax, ops.argmax);
      EXPECT_TRUE(same_bits(fused.mean, ops.mean));
      EXPECT_TRUE(same_bits(fused.rstd, ops.rstd));
      EXPECT_TRUE(same_bits(fused.rm, ops.rm));
      EXPECT_TRUE(same_bits(fused.rv, ops.rv));
      EXPECT_TRUE(same_bits(fused.dx, ops.dx));
      EXPECT_TRUE(same_bits(fused.dgamma, ops.dgamma));
      EXPECT_TRUE(same_bits(fused.dbeta, ops.dbeta));
      // A second backward gives the same bits (the sums' order is fixed).
      Tensor dx2(shape), dgamma2(Shape{ch}), dbeta2(Shape{ch});
      backend.batch_norm_relu_pool_backward(x, fused.y, fused.argmax, gamma, fused.mean, fused.rstd,
                                            dy, &dx2, dgamma2, dbeta2, fused.work);
      EXPECT_TRUE(same_bits(fused.dx, dx2));
      EXPECT_TRUE(same_bits(fused.dgamma, dgamma2));
      EXPECT_TRUE(same_bits(fused.dbeta, dbeta2));
      const auto dx_now = fused.dx.span(), dgamma_now = fused.dgamma.span();
      if (threads == 1) {
        one_thread_dx.assign(dx_now.begin(), dx_now.end());
        one_thread_dgamma.assign(dgamma_now.begin(), dgamma_now.end());
      } else {
        // Channels are split between threads whole: the thread count changes no bit.
        EXPECT_EQ(0, std::memcmp(dx_now.data(), one_thread_dx.data(), dx_now.size_bytes()));
        EXPECT_EQ(
            0, std::memcmp(dgamma_now.data(), one_thread_dgamma.data(), dgamma_now.size_bytes()));
      }
    }
  }
}

}  // namespace
}  // namespace tuner::training
