// The CPU backend's matrix products: GEMM, linear and convolution (the only translation unit of
// the engine that includes Eigen, and OpenBLAS when the build found it).
#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#ifdef TUNER_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "training/backends/cpu/activation_math.h"
#include "training/backends/cpu/cpu_backend.h"

namespace tuner::training {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using ConstMatMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

#ifdef TUNER_HAVE_OPENBLAS
// OpenBLAS's kernels beat Eigen's by about 1.3x on one core once every extent is at least this;
// on thinner products (a 3x3 convolution over one channel, a 10-way classifier) Eigen's are as
// fast or faster. The choice depends on the shape only, so results stay deterministic.
constexpr int64_t kMinOpenBlasExtent = 32;

bool use_openblas(int64_t m, int64_t n, int64_t k) {
  // The backend's own threads split every product, so OpenBLAS runs each call on the calling
  // thread. This sets the library's process-wide thread count; nothing else in the engine uses it.
  static const bool single_threaded = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  return single_threaded && m >= kMinOpenBlasExtent && n >= kMinOpenBlasExtent &&
         k >= kMinOpenBlasExtent;
}
#endif

// Single-threaded c[M,N] = alpha * op(a) * op(b) + beta * c on row-major blocks with leading
// dimensions; a is stored [M,K] (or [K,M] when ta), b [K,N] (or [N,K] when tb).
void gemm_serial(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef TUNER_HAVE_OPENBLAS
  if (use_openblas(m, n, k)) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
                static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
                static_cast<blasint>(ldc));
    return;
  }
#endif
  MatMap cm(c, m, n, Eigen::OuterStride<>(ldc));
  if (k == 0) {
    if (beta == 0.0f)
      cm.setZero();
    else
      cm *= beta;
    return;
  }
  ConstMatMap am(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstMatMap bm(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  auto product = [&](const auto& lhs, const auto& rhs) {
    if (beta == 0.0f) {
      cm.noalias() = alpha * (lhs * rhs);
    } else {
      if (beta != 1.0f) cm *= beta;
      cm.noalias() += alpha * (lhs * rhs);
    }
  };
  if (!ta && !tb)
    product(am, bm);
  else if (!ta && tb)
    product(am, bm.transpose());
  else if (ta && !tb)
    product(am.transpose(), bm);
  else
    product(am.transpose(), bm.transpose());
}

// Rows of output per thread below which a product is not split.
constexpr int64_t kMinRowsPerThread = 8;

// y[rows, cols] (leading dimension ldy) = bias broadcast over the rows, which the product then
// accumulates into (beta = 1): the bias costs no pass of its own, and OpenBLAS skips the pass that
// zeroes its output for beta = 0. Returns the beta to give the product.
float fill_with_bias(float* y, int64_t rows, int64_t cols, int64_t ldy, const float* bias) {
  if (bias == nullptr) return 0.0f;
  for (int64_t r = 0; r < rows; ++r) std::copy(bias, bias + cols, y + r * ldy);
  return 1.0f;
}

void apply_activation_rows(float* y, int64_t rows, int64_t cols, int64_t ldy, Activation act) {
  if (act == Activation::kNone) return;
  for (int64_t r = 0; r < rows; ++r) cpu::apply_activation(act, y + r * ldy, cols);
}

// The output columns j in [*j0, *j1) whose input column j * stride - padding + kw falls inside
// [0, w); the others read the zero padding.
void valid_columns(const Window2d& win, int64_t kw, int64_t w, int64_t ow, int64_t* j0,
                   int64_t* j1) {
  const int64_t first = win.padding - kw;     // j * stride >= first
  const int64_t last = w + win.padding - kw;  // j * stride < last
  *j0 = first <= 0 ? 0 : (first + win.stride - 1) / win.stride;
  *j1 = last <= 0 ? 0 : std::min(ow, (last + win.stride - 1) / win.stride);
  *j0 = std::min(*j0, *j1);
}

// im2col of one sample: x[C,H,W] -> col[C*KH*KW, OH*OW].
void im2col(const Window2d& win, const float* x, int64_t c_in, int64_t h, int64_t w, int64_t oh,
            int64_t ow, float* col) {
  const int64_t s = oh * ow, stride = win.stride;
  for (int64_t c = 0; c < c_in; ++c) {
    const float* plane = x + c * h * w;
    for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
        float* row = col + ((c * win.kernel_h + kh) * win.kernel_w + kw) * s;
        int64_t j0, j1;
        valid_columns(win, kw, w, ow, &j0, &j1);
        const int64_t shift = kw - win.padding;
        if (stride == 1 && ow == w && j0 < j1) {
          // Output rows map to consecutive input rows: one copy of the whole block, shifted by
          // the tap's column offset, then zeros over the columns that wrapped around a row edge.
          const int64_t i0 = std::clamp<int64_t>(win.padding - kh, 0, oh);
          const int64_t i1 = std::clamp<int64_t>(h + win.padding - kh, i0, oh);
          std::fill(row, row + i0 * ow, 0.0f);
          std::fill(row + i1 * ow, row + oh * ow, 0.0f);
          if (i0 == i1) continue;
          const float* src = plane + (i0 - win.padding + kh) * w;
          float* dst = row + i0 * ow;
          const int64_t n = (i1 - i0) * w;
          if (shift >= 0) {
            std::memcpy(dst, src + shift, static_cast<size_t>(n - shift) * sizeof(float));
          } else {
            std::memcpy(dst - shift, src, static_cast<size_t>(n + shift) * sizeof(float));
          }
          for (int64_t i = i0; i < i1; ++i) {
            std::fill(row + i * ow, row + i * ow + j0, 0.0f);
            std::fill(row + i * ow + j1, row + (i + 1) * ow, 0.0f);
          }
          continue;
        }
        for (int64_t i = 0; i < oh; ++i) {
          const int64_t ih = i * stride - win.padding + kh;
          float* out = row + i * ow;
          if (ih < 0 || ih >= h) {
            std::fill(out, out + ow, 0.0f);
            continue;
          }
          const float* in = plane + ih * w;
          std::fill(out, out + j0, 0.0f);
          if (stride == 1) {
            if (j0 < j1) {
              std::memcpy(out + j0, in + j0 + shift, static_cast<size_t>(j1 - j0) * sizeof(float));
            }
          } else {
            for (int64_t j = j0; j < j1; ++j) out[j] = in[j * stride + shift];
          }
          std::fill(out + j1, out + ow, 0.0f);
        }
      }
    }
  }
}

// col2im of one sample: dx[C,H,W] = sum of col[C*KH*KW, OH*OW] folded back (dx is overwritten).
void col2im(const Window2d& win, const float* col, int64_t c_in, int64_t h, int64_t w, int64_t oh,
            int64_t ow, float* dx) {
  std::fill(dx, dx + c_in * h * w, 0.0f);
  const int64_t s = oh * ow, stride = win.stride;
  for (int64_t c = 0; c < c_in; ++c) {
    float* plane = dx + c * h * w;
    for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
        const float* row = col + ((c * win.kernel_h + kh) * win.kernel_w + kw) * s;
        int64_t j0, j1;
        valid_columns(win, kw, w, ow, &j0, &j1);
        const int64_t shift = kw - win.padding;
        for (int64_t i = 0; i < oh; ++i) {
          const int64_t ih = i * stride - win.padding + kh;
          if (ih < 0 || ih >= h) continue;
          const float* in = row + i * ow;
          float* out = plane + ih * w;
          if (stride == 1) {
            for (int64_t j = j0; j < j1; ++j) out[j + shift] += in[j];
          } else {
            for (int64_t j = j0; j < j1; ++j) out[j * stride + shift] += in[j];
          }
        }
      }
    }
  }
}

}  // namespace

void CpuBackend::gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b,
                      float beta, Tensor& c) {
  const bool at = ta == Transpose::kYes, bt = tb == Transpose::kYes;
  const int64_t m = c.dim(0), n = c.dim(1), k = at ? a.dim(0) : a.dim(1);
  const int64_t lda = a.dim(1), ldb = b.dim(1), ldc = n;
  const float* ap = a.data();
  const float* bp = b.data();
  float* cp = c.data();
  if (m >= n) {
    pool_.parallel_for(m, kMinRowsPerThread, [&](int64_t r0, int64_t r1) {
      gemm_serial(at, bt, r1 - r0, n, k, alpha, at ? ap + r0 : ap + r0 * lda, lda, bp, ldb, beta,
                  cp + r0 * ldc, ldc);
    });
  } else {
    pool_.parallel_for(n, kMinRowsPerThread, [&](int64_t c0, int64_t c1) {
      gemm_serial(at, bt, m, c1 - c0, k, alpha, ap, lda, bt ? bp + c0 * ldb : bp + c0, ldb, beta,
                  cp + c0, ldc);
    });
  }
}

void CpuBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor* bias,
                                Activation act, Tensor& y) {
  const int64_t batch = x.dim(0), in = x.dim(1), out = w.dim(0);
  const float* xp = x.data();
  const float* wp = w.data();
  const float* bp = bias ? bias->data() : nullptr;
  float* yp = y.data();
  // Eigen packs the whole of its right operand in each thread (w when the batch is split, x when
  // the output features are), so split the larger of the two: fewer floats packed per thread.
  if (batch >= out) {
    pool_.parallel_for(batch, kMinRowsPerThread, [&](int64_t r0, int64_t r1) {
      const float beta = fill_with_bias(yp + r0 * out, r1 - r0, out, out, bp);
      gemm_serial(false, true, r1 - r0, out, in, 1.0f, xp + r0 * in, in, wp, in, beta,
                  yp + r0 * out, out);
      apply_activation_rows(yp + r0 * out, r1 - r0, out, out, act);
    });
  } else {
    pool_.parallel_for(out, kMinRowsPerThread, [&](int64_t c0, int64_t c1) {
      const float beta = fill_with_bias(yp + c0, batch, c1 - c0, out, bp ? bp + c0 : nullptr);
      gemm_serial(false, true, batch, c1 - c0, in, 1.0f, xp, in, wp + c0 * in, in, beta, yp + c0,
                  out);
      apply_activation_rows(yp + c0, batch, c1 - c0, out, act);
    });
  }
}

void CpuBackend::linear_backward(const Tensor& x, const Tensor& w, const Tensor& y, Activation act,
                                 const Tensor& dy, Tensor& dz, Tensor* dx, Tensor& dw, Tensor* db) {
  const int64_t batch = x.dim(0), in = x.dim(1), out = w.dim(0);
  const float* g = dy.data();
  if (act != Activation::kNone) {
    const float* yp = y.data();
    const float* dyp = dy.data();
    float* dzp = dz.data();
    pool_.parallel_for(batch * out, 4096, [&](int64_t i0, int64_t i1) {
      cpu::activation_grad_from_output(act, yp + i0, dyp + i0, dzp + i0, i1 - i0);
    });
    g = dz.data();
  }
  const float* xp = x.data();
  const float* wp = w.data();
  float* dwp = dw.data();
  float* dbp = db ? db->data() : nullptr;
  float* dxp = dx ? dx->data() : nullptr;
  const int threads = num_threads();
  // One dispatch: thread t computes its rows of dx and its rows (output features) of dw and db.
  pool_.run([&](int t) {
    const int64_t o0 = out * t / threads, o1 = out * (t + 1) / threads;
    if (o0 < o1) {
      gemm_serial(true, false, o1 - o0, in, batch, 1.0f, g + o0, out, xp, in, 0.0f, dwp + o0 * in,
                  in);
      if (dbp != nullptr) {
        for (int64_t o = o0; o < o1; ++o) dbp[o] = 0.0f;
        for (int64_t r = 0; r < batch; ++r) {
          const float* row = g + r * out;
          for (int64_t o = o0; o < o1; ++o) dbp[o] += row[o];
        }
      }
    }
    if (dxp != nullptr) {
      // As in linear_forward: split whichever of dz[B,O] and w[O,I] is larger.
      if (batch >= in) {
        const int64_t r0 = batch * t / threads, r1 = batch * (t + 1) / threads;
        if (r0 < r1) {
          gemm_serial(false, false, r1 - r0, in, out, 1.0f, g + r0 * out, out, wp, in, 0.0f,
                      dxp + r0 * in, in);
        }
      } else {
        const int64_t c0 = in * t / threads, c1 = in * (t + 1) / threads;
        if (c0 < c1) {
          gemm_serial(false, false, batch, c1 - c0, out, 1.0f, g, out, wp + c0, in, 0.0f, dxp + c0,
                      in);
        }
      }
    }
  });
}

int64_t CpuBackend::conv2d_backward_workspace(const Window2d& win, const Shape& x,
                                              int64_t out_channels) const {
  const int64_t ckk = x[1] * win.kernel_h * win.kernel_w;
  const int64_t s = win.out_h(x[2]) * win.out_w(x[3]);
  // Per thread: a partial dw[O, CKK], a partial db[O], and a dcol[CKK, S].
  return static_cast<int64_t>(num_threads()) * (out_channels * ckk + out_channels + ckk * s);
}

void CpuBackend::conv2d_forward(const Window2d& win, const Tensor& x, const Tensor& w,
                                const Tensor* bias, Activation act, Tensor& col, Tensor& y) {
  const int64_t batch = x.dim(0), c_in = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t out = w.dim(0), oh = y.dim(2), ow = y.dim(3), s = oh * ow;
  const int64_t ckk = c_in * win.kernel_h * win.kernel_w;
  const float* xp = x.data();
  const float* wp = w.data();
  const float* bp = bias ? bias->data() : nullptr;
  float* colp = col.data();
  float* yp = y.data();
  pool_.parallel_for(batch, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      float* cb = colp + b * ckk * s;
      float* yb = yp + b * out * s;
      im2col(win, xp + b * c_in * h * wd, c_in, h, wd, oh, ow, cb);
      float beta = 0.0f;
      if (bp != nullptr) {
        for (int64_t o = 0; o < out; ++o) std::fill(yb + o * s, yb + (o + 1) * s, bp[o]);
        beta = 1.0f;
      }
      gemm_serial(false, false, out, s, ckk, 1.0f, wp, ckk, cb, s, beta, yb, s);
      cpu::apply_activation(act, yb, out * s);
    }
  });
}

void CpuBackend::conv2d_backward(const Window2d& win, const Tensor& x, const Tensor& w,
                                 const Tensor& col, const Tensor& y, Activation act,
                                 const Tensor& dy, Tensor& dz, Tensor* dx, Tensor& dw, Tensor* db,
                                 std::span<float> work) {
  const int64_t batch = x.dim(0), c_in = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t out = w.dim(0), oh = dy.dim(2), ow = dy.dim(3), s = oh * ow;
  const int64_t ckk = c_in * win.kernel_h * win.kernel_w;
  const int threads = num_threads();
  const int64_t per_thread = out * ckk + out + ckk * s;
  const float* wp = w.data();
  const float* colp = col.data();
  const float* yp = y.data();
  const float* dyp = dy.data();
  float* dzp = dz.data();
  float* dxp = dx ? dx->data() : nullptr;
  pool_.run([&](int t) {
    float* dw_t = work.data() + t * per_thread;
    float* db_t = dw_t + out * ckk;
    float* dcol = db_t + out;
    std::fill(dw_t, dw_t + out * ckk + out, 0.0f);
    const int64_t b0 = batch * t / threads, b1 = batch * (t + 1) / threads;
    for (int64_t b = b0; b < b1; ++b) {
      const float* g = dyp + b * out * s;
      if (act != Activation::kNone) {
        cpu::activation_grad_from_output(act, yp + b * out * s, g, dzp + b * out * s, out * s);
        g = dzp + b * out * s;
      }
      const float* cb = colp + b * ckk * s;
      // dw_t[O,CKK] += g[O,S] * cb[CKK,S]^T
      gemm_serial(false, true, out, ckk, s, 1.0f, g, s, cb, s, 1.0f, dw_t, ckk);
      for (int64_t o = 0; o < out; ++o) db_t[o] += cpu::sum_fixed_order(g + o * s, s);
      if (dxp != nullptr) {
        // dcol[CKK,S] = w[O,CKK]^T * g[O,S]
        gemm_serial(true, false, ckk, s, out, 1.0f, wp, ckk, g, s, 0.0f, dcol, s);
        col2im(win, dcol, c_in, h, wd, oh, ow, dxp + b * c_in * h * wd);
      }
    }
  });
  // Sum the per-thread partials in thread order.
  float* dwp = dw.data();
  float* dbp = db ? db->data() : nullptr;
  const int64_t total = out * ckk + out;
  pool_.parallel_for(total, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float acc = 0.0f;
      for (int t = 0; t < threads; ++t) acc += work[t * per_thread + i];
      if (i < out * ckk)
        dwp[i] = acc;
      else if (dbp != nullptr)
        dbp[i - out * ckk] = acc;
    }
  });
}

}  // namespace tuner::training
