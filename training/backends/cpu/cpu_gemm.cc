// The CPU backend's matrix products: GEMM, linear and convolution (the only translation unit of
// the engine that includes Eigen, and OpenBLAS when the build found it).
#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>
#ifdef TUNER_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "training/backends/cpu/activation_math.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cpu/cpu_kernels.h"
#include "training/backends/cpu/dnnl_conv.h"
#include "training/backends/cpu/dnnl_matmul.h"
#include "training/backends/cpu/max_pool_2x2.h"

namespace tuner::training {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using ConstMatMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

// The libraries' kernels (oneDNN's, else OpenBLAS's) beat Eigen's once every extent is at least
// this (OpenBLAS about 1.3x Eigen on one core; oneDNN 1.03x (1024^3) to 1.7x (32 x 784 x 128)
// OpenBLAS on the products of a training step, docs/training.md); on thinner products (a 3x3
// convolution over one channel, a 10-way classifier) Eigen's are as fast or faster. The choice
// depends on the shape only, so results stay deterministic.
constexpr int64_t kMinLibraryExtent = 32;

bool library_sized(int64_t m, int64_t n, int64_t k) {
  return m >= kMinLibraryExtent && n >= kMinLibraryExtent && k >= kMinLibraryExtent;
}

bool use_dnnl(int64_t m, int64_t n, int64_t k) {
  static const bool found = !cpu::dnnl_kernels().library.empty();
  return found && library_sized(m, n, k);
}

#ifdef TUNER_HAVE_OPENBLAS
bool use_openblas(int64_t m, int64_t n, int64_t k) {
  // The backend's own threads split every product, so OpenBLAS runs each call on the calling
  // thread. This sets the library's process-wide thread count; nothing else in the engine uses it.
  static const bool single_threaded = [] {
    cpu_gemm_kernels();  // OpenBLAS's kernels for this CPU, chosen before its first call
    openblas_set_num_threads(1);
    return true;
  }();
  return single_threaded && library_sized(m, n, k);
}
#endif

// One input of a product: its fp32 values and, where the backend has rounded them to bf16 for all
// of its threads at once (CpuBackend::round_shared), their bf16 copy in the same layout, so that
// a block of the one is the same block of the other.
struct Operand {
  Operand(const float* v) : values(v) {}  // NOLINT: a bare pointer is an fp32-only operand
  Operand(const float* v, const uint16_t* r) : values(v), bf16(r) {}
  Operand at(int64_t offset) const { return {values + offset, bf16 ? bf16 + offset : nullptr}; }
  const float* values;
  const uint16_t* bf16 = nullptr;
};

// The bf16 product. An operand without a shared bf16 copy is rounded into this thread's scratch
// (which keeps its largest size, so steps after the first allocate nothing).
void gemm_serial_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, Operand a,
                      int64_t lda, Operand b, int64_t ldb, float beta, float* c, int64_t ldc) {
  thread_local std::vector<uint16_t> a16, b16;
  const auto rounded = [](Operand x, int64_t rows, int64_t cols, int64_t* ld,
                          std::vector<uint16_t>& scratch) {
    if (x.bf16 != nullptr) return x.bf16;
    if (scratch.size() < static_cast<size_t>(rows * cols)) scratch.resize(rows * cols);
    cpu::round_to_bf16(x.values, rows, cols, *ld, scratch.data());
    *ld = cols;
    return static_cast<const uint16_t*>(scratch.data());
  };
  const uint16_t* a_bf16 = rounded(a, ta ? k : m, ta ? m : k, &lda, a16);
  const uint16_t* b_bf16 = rounded(b, tb ? n : k, tb ? k : n, &ldb, b16);
  cpu::dnnl_gemm_bf16(ta, tb, m, n, k, alpha, a_bf16, lda, b_bf16, ldb, beta, c, ldc);
}

// Single-threaded c[M,N] = alpha * op(a) * op(b) + beta * c on row-major blocks with leading
// dimensions; a is stored [M,K] (or [K,M] when ta), b [K,N] (or [N,K] when tb). With
// Precision::kBfloat16 the inputs are rounded to bf16 and the product accumulates in fp32.
void gemm_serial(Precision precision, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                 float alpha, Operand a_in, int64_t lda, Operand b_in, int64_t ldb, float beta,
                 float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k > 0 && precision == Precision::kBfloat16) {
    gemm_serial_bf16(ta, tb, m, n, k, alpha, a_in, lda, b_in, ldb, beta, c, ldc);
    return;
  }
  const float* a = a_in.values;
  const float* b = b_in.values;
  if (use_dnnl(m, n, k)) {
    cpu::dnnl_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#ifdef TUNER_HAVE_OPENBLAS
  if (use_openblas(m, n, k)) {
    // OpenBLAS applies beta in a pass of its own before its kernels accumulate into C; for
    // beta = 0 that pass took 4% of a CNN training step (perf), a memset of the same zeros far
    // less, and the bits are the same.
    if (beta == 0.0f) {
      for (int64_t r = 0; r < m; ++r) std::fill(c + r * ldc, c + r * ldc + n, 0.0f);
      beta = 1.0f;
    }
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
  // Called per kernel tap and sample: at stride 1, skip the divisions (tens of cycles each).
  const auto ceil_div = [&](int64_t v) {
    return win.stride == 1 ? v : (v + win.stride - 1) / win.stride;
  };
  *j0 = first <= 0 ? 0 : ceil_div(first);
  *j1 = last <= 0 ? 0 : std::min(ow, ceil_div(last));
  *j0 = std::min(*j0, *j1);
}

// Zeroes the columns [0, j0) and [j1, ow) of the rows [i0, i1) of a block with rows of ow: the
// few columns where a window reaches into the padding. Column by column: strided stores, which
// the compiler does not turn into a memset call per row (that call costs more than the stores).
template <class T>
void zero_edge_columns(T* block, int64_t ow, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  for (int64_t j = 0; j < j0; ++j) {
    for (int64_t i = i0; i < i1; ++i) block[i * ow + j] = T{};
  }
  for (int64_t j = j1; j < ow; ++j) {
    for (int64_t i = i0; i < i1; ++i) block[i * ow + j] = T{};
  }
}

// dst[0, n) = src[0, n), as floats or rounded to bf16.
template <class T>
void copy_values(T* dst, const float* src, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else {
    cpu::round_to_bf16(src, 1, n, 0, dst);
  }
}

// im2col of one sample: x[C,H,W] -> col[C*KH*KW, OH*OW], in fp32 or (T = uint16_t) straight in
// bf16 for bf16 products, without an fp32 copy to round.
template <class T>
void im2col(const Window2d& win, const float* x, int64_t c_in, int64_t h, int64_t w, int64_t oh,
            int64_t ow, T* col) {
  const int64_t s = oh * ow, stride = win.stride;
  for (int64_t c = 0; c < c_in; ++c) {
    const float* plane = x + c * h * w;
    for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
        T* row = col + ((c * win.kernel_h + kh) * win.kernel_w + kw) * s;
        int64_t j0, j1;
        valid_columns(win, kw, w, ow, &j0, &j1);
        const int64_t shift = kw - win.padding;
        if (stride == 1 && ow == w && j0 < j1) {
          // Output rows map to consecutive input rows: one copy of the whole block, shifted by
          // the tap's column offset, then zeros over the columns that wrapped around a row edge.
          const int64_t i0 = std::clamp<int64_t>(win.padding - kh, 0, oh);
          const int64_t i1 = std::clamp<int64_t>(h + win.padding - kh, i0, oh);
          if (i0 > 0) std::fill(row, row + i0 * ow, T{});
          if (i1 < oh) std::fill(row + i1 * ow, row + oh * ow, T{});
          if (i0 == i1) continue;
          const float* src = plane + (i0 - win.padding + kh) * w;
          T* dst = row + i0 * ow;
          const int64_t n = (i1 - i0) * w;
          if (shift >= 0) {
            copy_values(dst, src + shift, n - shift);
          } else {
            copy_values(dst - shift, src, n + shift);
          }
          zero_edge_columns(row, ow, i0, i1, j0, j1);
          continue;
        }
        for (int64_t i = 0; i < oh; ++i) {
          const int64_t ih = i * stride - win.padding + kh;
          T* out = row + i * ow;
          if (ih < 0 || ih >= h) {
            std::fill(out, out + ow, T{});
            continue;
          }
          const float* in = plane + ih * w;
          std::fill(out, out + j0, T{});
          if (stride == 1) {
            if (j0 < j1) {
              copy_values(out + j0, in + j0 + shift, j1 - j0);
            }
          } else {
            for (int64_t j = j0; j < j1; ++j) copy_values(out + j, in + j * stride + shift, 1);
          }
          std::fill(out + j1, out + ow, T{});
        }
      }
    }
  }
}

// col2im of one sample: dx[C,H,W] = sum of col[C*KH*KW, OH*OW] folded back (dx is overwritten;
// col's entries that fall on the padding are zeroed).
void col2im(const Window2d& win, float* col, int64_t c_in, int64_t h, int64_t w, int64_t oh,
            int64_t ow, float* dx) {
  std::fill(dx, dx + c_in * h * w, 0.0f);
  const int64_t s = oh * ow, stride = win.stride;
  for (int64_t c = 0; c < c_in; ++c) {
    float* plane = dx + c * h * w;
    for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
        float* row = col + ((c * win.kernel_h + kh) * win.kernel_w + kw) * s;
        int64_t j0, j1;
        valid_columns(win, kw, w, ow, &j0, &j1);
        const int64_t shift = kw - win.padding;
        if (stride == 1 && ow == w && j0 < j1) {
          // As in im2col: consecutive output rows add onto consecutive input rows, so the block
          // is one long vectorizable sum once the entries that wrapped around a row edge (they
          // belong to the padding) are zero.
          const int64_t i0 = std::clamp<int64_t>(win.padding - kh, 0, oh);
          const int64_t i1 = std::clamp<int64_t>(h + win.padding - kh, i0, oh);
          if (i0 == i1) continue;
          zero_edge_columns(row, ow, i0, i1, j0, j1);
          float* dst = plane + (i0 - win.padding + kh) * w;
          const float* src = row + i0 * ow;
          const int64_t n = (i1 - i0) * w;
          if (shift >= 0) {
            for (int64_t k = 0; k < n - shift; ++k) dst[k + shift] += src[k];
          } else {
            for (int64_t k = -shift; k < n; ++k) dst[k + shift] += src[k];
          }
          continue;
        }
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

// The geometry of one convolution call, from its input x[B,C,H,W], its weights [O,C,KH,KW] and
// the output extent oh x ow.
struct ConvDims {
  int64_t batch, c_in, h, w, out, oh, ow, s, ckk;
  ConvDims(const Window2d& win, const Tensor& x, const Tensor& weights, int64_t out_h,
           int64_t out_w)
      : batch(x.dim(0)),
        c_in(x.dim(1)),
        h(x.dim(2)),
        w(x.dim(3)),
        out(weights.dim(0)),
        oh(out_h),
        ow(out_w),
        s(out_h * out_w),
        ckk(x.dim(1) * win.kernel_h * win.kernel_w) {}

  // oneDNN's view of the samples [b0, b1).
  cpu::DnnlConvShape dnnl(const Window2d& win, int64_t b0, int64_t b1, Precision p) const {
    return {.n = b1 - b0,
            .c = c_in,
            .h = h,
            .w = w,
            .o = out,
            .kh = win.kernel_h,
            .kw = win.kernel_w,
            .stride = win.stride,
            .padding = win.padding,
            .bf16 = p == Precision::kBfloat16};
  }
};

// One sample's convolution: col[CKK,S] = im2col(x[C,H,W]), y[O,S] = act(w[O,CKK] col + bias).
// The unfolded sample x[C,H,W] as a product's operand: into `col`, or, with bf16 products and no
// fp32 copy wanted (col == nullptr), straight into this thread's bf16 scratch.
Operand unfold(Precision p, const Window2d& win, const ConvDims& d, const float* x, float* col) {
  if (col != nullptr || p != Precision::kBfloat16) {
    im2col(win, x, d.c_in, d.h, d.w, d.oh, d.ow, col);
    return Operand(col);
  }
  thread_local std::vector<uint16_t> col16;
  if (col16.size() < static_cast<size_t>(d.ckk * d.s)) col16.resize(d.ckk * d.s);
  im2col(win, x, d.c_in, d.h, d.w, d.oh, d.ow, col16.data());
  return Operand(nullptr, col16.data());
}

// col may be nullptr with bf16 products (see unfold).
void conv_forward_sample(Precision p, const Window2d& win, const ConvDims& d, const float* x,
                         Operand w, const float* bias, Activation act, float* col, float* y) {
  const Operand unfolded = unfold(p, win, d, x, col);
  float beta = 0.0f;
  if (bias != nullptr) {
    for (int64_t o = 0; o < d.out; ++o) std::fill(y + o * d.s, y + (o + 1) * d.s, bias[o]);
    beta = 1.0f;
  }
  gemm_serial(p, false, false, d.out, d.s, d.ckk, 1.0f, w, d.ckk, unfolded, d.s, beta, y, d.s);
  cpu::apply_activation(act, y, d.out * d.s);
}

// One sample's share of a convolution's backward given its dz[O,S]: dw[O,CKK] += dz col^T,
// dx[C,H,W] = col2im(w^T dz) through dcol[CKK,S] (skipped when dx is nullptr). dcol may be col's
// memory: col is read only before dcol is written.
void conv_backward_sample(Precision p, const Window2d& win, const ConvDims& d, const float* dz,
                          Operand col, Operand w, float* dw, float* dcol, float* dx) {
  // Both products read dz: with bf16 products, round it once.
  Operand g(dz);
  if (p == Precision::kBfloat16 && dx != nullptr) {
    thread_local std::vector<uint16_t> dz16;
    if (dz16.size() < static_cast<size_t>(d.out * d.s)) dz16.resize(d.out * d.s);
    cpu::round_to_bf16(dz, 1, d.out * d.s, 0, dz16.data());
    g.bf16 = dz16.data();
  }
  gemm_serial(p, false, true, d.out, d.ckk, d.s, 1.0f, g, d.s, col, d.s, 1.0f, dw, d.ckk);
  if (dx != nullptr) {
    gemm_serial(p, true, false, d.ckk, d.s, d.out, 1.0f, w, d.ckk, g, d.s, 0.0f, dcol, d.s);
    col2im(win, dcol, d.c_in, d.h, d.w, d.oh, d.ow, dx);
  }
}

}  // namespace

bool cpu_conv2d_unfolds(const Window2d& win, int64_t in_channels) {
  return !cpu::dnnl_conv_suits(in_channels, win.kernel_h, win.kernel_w);
}

const uint16_t* CpuBackend::round_shared(const Tensor& t, int slot) {
  if (precision_ != Precision::kBfloat16) return nullptr;
  std::vector<uint16_t>& copy = rounded_[slot];
  const int64_t n = t.numel();
  if (copy.size() < static_cast<size_t>(n)) copy.resize(static_cast<size_t>(n));
  const float* src = t.data();
  uint16_t* dst = copy.data();
  pool_.parallel_for(n, 16384, [&](int64_t i0, int64_t i1) {
    cpu::round_to_bf16(src + i0, 1, i1 - i0, 0, dst + i0);
  });
  return dst;
}

void CpuBackend::gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b,
                      float beta, Tensor& c) {
  const bool at = ta == Transpose::kYes, bt = tb == Transpose::kYes;
  const int64_t m = c.dim(0), n = c.dim(1), k = at ? a.dim(0) : a.dim(1);
  const int64_t lda = a.dim(1), ldb = b.dim(1), ldc = n;
  const Operand ap(a.data(), round_shared(a, 0)), bp(b.data(), round_shared(b, 1));
  float* cp = c.data();
  if (m >= n) {
    pool_.parallel_for(m, kMinRowsPerThread, [&](int64_t r0, int64_t r1) {
      gemm_serial(precision_, at, bt, r1 - r0, n, k, alpha, ap.at(at ? r0 : r0 * lda), lda, bp, ldb,
                  beta, cp + r0 * ldc, ldc);
    });
  } else {
    pool_.parallel_for(n, kMinRowsPerThread, [&](int64_t c0, int64_t c1) {
      gemm_serial(precision_, at, bt, m, c1 - c0, k, alpha, ap, lda, bp.at(bt ? c0 * ldb : c0), ldb,
                  beta, cp + c0, ldc);
    });
  }
}

void CpuBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor* bias,
                                Activation act, Tensor& y) {
  const int64_t batch = x.dim(0), in = x.dim(1), out = w.dim(0);
  const Operand xp(x.data(), round_shared(x, 0)), wp(w.data(), round_shared(w, 1));
  const float* bp = bias ? bias->data() : nullptr;
  float* yp = y.data();
  // Eigen packs the whole of its right operand in each thread (w when the batch is split, x when
  // the output features are), so split the larger of the two: fewer floats packed per thread.
  if (batch >= out) {
    pool_.parallel_for(batch, kMinRowsPerThread, [&](int64_t r0, int64_t r1) {
      const float beta = fill_with_bias(yp + r0 * out, r1 - r0, out, out, bp);
      gemm_serial(precision_, false, true, r1 - r0, out, in, 1.0f, xp.at(r0 * in), in, wp, in, beta,
                  yp + r0 * out, out);
      apply_activation_rows(yp + r0 * out, r1 - r0, out, out, act);
    });
  } else {
    pool_.parallel_for(out, kMinRowsPerThread, [&](int64_t c0, int64_t c1) {
      const float beta = fill_with_bias(yp + c0, batch, c1 - c0, out, bp ? bp + c0 : nullptr);
      gemm_serial(precision_, false, true, batch, c1 - c0, in, 1.0f, xp, in, wp.at(c0 * in), in,
                  beta, yp + c0, out);
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
  const Operand gp(g, round_shared(act != Activation::kNone ? dz : dy, 0));
  const Operand xp(x.data(), round_shared(x, 1));
  const Operand wp(w.data(), dx ? round_shared(w, 2) : nullptr);
  float* dwp = dw.data();
  float* dbp = db ? db->data() : nullptr;
  float* dxp = dx ? dx->data() : nullptr;
  const int threads = num_threads();
  // One dispatch: thread t computes its rows of dx and its rows (output features) of dw and db.
  pool_.run([&](int t) {
    const int64_t o0 = out * t / threads, o1 = out * (t + 1) / threads;
    if (o0 < o1) {
      gemm_serial(precision_, true, false, o1 - o0, in, batch, 1.0f, gp.at(o0), out, xp, in, 0.0f,
                  dwp + o0 * in, in);
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
          gemm_serial(precision_, false, false, r1 - r0, in, out, 1.0f, gp.at(r0 * out), out, wp,
                      in, 0.0f, dxp + r0 * in, in);
        }
      } else {
        const int64_t c0 = in * t / threads, c1 = in * (t + 1) / threads;
        if (c0 < c1) {
          gemm_serial(precision_, false, false, batch, c1 - c0, out, 1.0f, gp, out, wp.at(c0), in,
                      0.0f, dxp + c0, in);
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
  const ConvDims d(win, x, w, y.dim(2), y.dim(3));
  const float* xp = x.data();
  if (!cpu_conv2d_unfolds(win, d.c_in)) {
    // Each thread convolves its samples in one oneDNN call; col is not written.
    const int threads = num_threads();
    const float* wp = w.data();
    const float* bp = bias ? bias->data() : nullptr;
    float* colp = col.data();
    float* yp = y.data();
    pool_.run([&](int t) {
      const int64_t b0 = d.batch * t / threads, b1 = d.batch * (t + 1) / threads;
      if (b0 == b1) return;
      float* yt = yp + b0 * d.out * d.s;
      // The thread's samples of col keep x in the backward's layout for it (where it fits).
      cpu::dnnl_conv_forward(d.dnnl(win, b0, b1, precision_), xp + b0 * d.c_in * d.h * d.w, wp, bp,
                             yt, colp + b0 * d.ckk * d.s,
                             static_cast<size_t>((b1 - b0) * d.ckk * d.s) * sizeof(float));
      cpu::apply_activation(act, yt, (b1 - b0) * d.out * d.s);
    });
    return;
  }
  const Operand wp(w.data(), round_shared(w, 0));
  const float* bp = bias ? bias->data() : nullptr;
  float* colp = col.data();
  float* yp = y.data();
  pool_.parallel_for(d.batch, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      conv_forward_sample(precision_, win, d, xp + b * d.c_in * d.h * d.w, wp, bp, act,
                          colp + b * d.ckk * d.s, yp + b * d.out * d.s);
    }
  });
}

void CpuBackend::reduce_conv_partials(std::span<const float> work, int64_t offset,
                                      int64_t per_thread, int64_t out, int64_t ckk, Tensor& dw,
                                      Tensor* db) {
  const int threads = num_threads();
  float* dwp = dw.data();
  float* dbp = db ? db->data() : nullptr;
  const int64_t total = out * ckk + out;
  pool_.parallel_for(total, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float acc = 0.0f;
      for (int t = 0; t < threads; ++t) acc += work[offset + t * per_thread + i];
      if (i < out * ckk)
        dwp[i] = acc;
      else if (dbp != nullptr)
        dbp[i - out * ckk] = acc;
    }
  });
}

void CpuBackend::conv2d_backward(const Window2d& win, const Tensor& x, const Tensor& w,
                                 const Tensor& col, const Tensor& y, Activation act,
                                 const Tensor& dy, Tensor& dz, Tensor* dx, Tensor& dw, Tensor* db,
                                 std::span<float> work) {
  const ConvDims d(win, x, w, dy.dim(2), dy.dim(3));
  const int threads = num_threads();
  const int64_t per_thread = d.out * d.ckk + d.out + d.ckk * d.s;
  const float* yp = y.data();
  const float* dyp = dy.data();
  float* dzp = dz.data();
  float* dxp = dx ? dx->data() : nullptr;
  if (!cpu_conv2d_unfolds(win, d.c_in)) {
    // Each thread: dz and db of its samples, then their dx and partial dw in one oneDNN call.
    const float* xp = x.data();
    const float* wp = w.data();
    const float* colp = col.data();
    pool_.run([&](int t) {
      float* dw_t = work.data() + t * per_thread;
      float* db_t = dw_t + d.out * d.ckk;
      std::fill(db_t, db_t + d.out, 0.0f);
      const int64_t b0 = d.batch * t / threads, b1 = d.batch * (t + 1) / threads;
      if (b0 == b1) {
        std::fill(dw_t, dw_t + d.out * d.ckk, 0.0f);
        return;
      }
      const int64_t offset = b0 * d.out * d.s, n = (b1 - b0) * d.out * d.s;
      const float* g = dyp + offset;
      if (act != Activation::kNone) {
        cpu::activation_grad_from_output(act, yp + offset, g, dzp + offset, n);
        g = dzp + offset;
      }
      for (int64_t b = 0; db != nullptr && b < b1 - b0; ++b) {
        for (int64_t o = 0; o < d.out; ++o) {
          db_t[o] += cpu::sum_fixed_order(g + (b * d.out + o) * d.s, d.s);
        }
      }
      cpu::dnnl_conv_backward(d.dnnl(win, b0, b1, precision_), xp + b0 * d.c_in * d.h * d.w, wp, g,
                              dxp ? dxp + b0 * d.c_in * d.h * d.w : nullptr, dw_t,
                              colp + b0 * d.ckk * d.s,
                              static_cast<size_t>((b1 - b0) * d.ckk * d.s) * sizeof(float));
    });
    reduce_conv_partials(work, 0, per_thread, d.out, d.ckk, dw, db);
    return;
  }
  const Operand wp(w.data(), round_shared(w, 0));
  const float* colp = col.data();
  pool_.run([&](int t) {
    float* dw_t = work.data() + t * per_thread;
    float* db_t = dw_t + d.out * d.ckk;
    float* dcol = db_t + d.out;
    std::fill(dw_t, dw_t + d.out * d.ckk + d.out, 0.0f);
    const int64_t b0 = d.batch * t / threads, b1 = d.batch * (t + 1) / threads;
    for (int64_t b = b0; b < b1; ++b) {
      const float* g = dyp + b * d.out * d.s;
      if (act != Activation::kNone) {
        cpu::activation_grad_from_output(act, yp + b * d.out * d.s, g, dzp + b * d.out * d.s,
                                         d.out * d.s);
        g = dzp + b * d.out * d.s;
      }
      for (int64_t o = 0; db != nullptr && o < d.out; ++o) {
        db_t[o] += cpu::sum_fixed_order(g + o * d.s, d.s);
      }
      conv_backward_sample(precision_, win, d, g, colp + b * d.ckk * d.s, wp, dw_t, dcol,
                           dxp ? dxp + b * d.c_in * d.h * d.w : nullptr);
    }
  });
  reduce_conv_partials(work, 0, per_thread, d.out, d.ckk, dw, db);
}

namespace {

// Samples per oneDNN call in the fused conv2d_pool_* ops: their convolution output (in the
// backward, its dz) stays in the thread's L2 cache between the convolution and the pooling.
constexpr int64_t kPoolChunk = 8;

// This thread's scratch of at least `floats` for conv2d_pool_*'s oneDNN path; it keeps its
// largest size, so steps after the first allocate nothing.
float* pool_chunk_scratch(int64_t floats) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(floats)) scratch.resize(static_cast<size_t>(floats));
  return scratch.data();
}

}  // namespace

// Per thread of conv2d_pool_*: one sample's unfolded input [CKK, S] (in backward, then its
// dcol), its convolution output [O, S] (in backward, its dz), a partial dw[O, CKK] and db[O], and
// its pooled gradient times act' [O, S / 4]. Together they stay in the thread's cache: nothing of
// the size of the batch's unfolded input or convolution output is kept between the passes.
struct PoolScratch {
  // The floats per thread for a convolution with CKK rows of unfolded input, S output pixels, O
  // output channels and P pooled pixels; the partial dw starts at dw_offset of them.
  static int64_t floats(int64_t ckk, int64_t s, int64_t out, int64_t pooled) {
    return dw_offset(ckk, s, out) + out * ckk + out + out * pooled;
  }
  static int64_t dw_offset(int64_t ckk, int64_t s, int64_t out) { return ckk * s + out * s; }
  static int64_t floats(const ConvDims& d) {
    return floats(d.ckk, d.s, d.out, (d.oh / 2) * (d.ow / 2));
  }

  PoolScratch(std::span<float> work, int t, const ConvDims& d)
      : col(work.data() + t * floats(d)),
        conv(col + d.ckk * d.s),
        dw(conv + d.out * d.s),
        db(dw + d.out * d.ckk),
        g(db + d.out) {}

  float* const col;
  float* const conv;
  float* const dw;
  float* const db;
  float* const g;
};

int64_t CpuBackend::conv2d_pool_workspace(const Window2d& win, const Shape& x,
                                          int64_t out_channels) const {
  const int64_t oh = win.out_h(x[2]), ow = win.out_w(x[3]);
  return static_cast<int64_t>(num_threads()) *
         PoolScratch::floats(x[1] * win.kernel_h * win.kernel_w, oh * ow, out_channels,
                             (oh / 2) * (ow / 2));
}

void CpuBackend::conv2d_pool_forward(const Window2d& win, const Tensor& x, const Tensor& w,
                                     const Tensor* bias, Activation act, Tensor& y,
                                     std::span<int32_t> argmax, std::span<float> work) {
  const ConvDims d(win, x, w, win.out_h(x.dim(2)), win.out_w(x.dim(3)));
  const int64_t ph = y.dim(2), pw = y.dim(3), ps = ph * pw;
  const int threads = num_threads();
  const float* xp = x.data();
  const float* bp = bias ? bias->data() : nullptr;
  float* yp = y.data();
  // The pooling applies a relu as it reads its windows (no pass of its own).
  const bool relu = act == Activation::kRelu;
  // Sample b's pooled output and argmax from its convolution output conv[O, S].
  const auto pool_sample = [&](int64_t b, const float* conv) {
    for (int64_t o = 0; o < d.out; ++o) {
      const int64_t plane = b * d.out + o;
      const float* in = conv + o * d.s;
      float* out = yp + plane * ps;
      int32_t* arg = argmax.data() + plane * ps;
      if (relu) {
        cpu::max_pool_2x2_plane<true>(in, d.ow, ph, pw, out, arg);
      } else {
        cpu::max_pool_2x2_plane(in, d.ow, ph, pw, out, arg);
      }
    }
  };
  if (!cpu_conv2d_unfolds(win, d.c_in)) {
    // oneDNN's convolution of kPoolChunk samples at a time into this thread's scratch, pooled
    // from there while it is in cache.
    const float* wp = w.data();
    pool_.run([&](int t) {
      const int64_t b0 = d.batch * t / threads, b1 = d.batch * (t + 1) / threads;
      float* conv = pool_chunk_scratch(kPoolChunk * d.out * d.s);
      for (int64_t c0 = b0; c0 < b1; c0 += kPoolChunk) {
        const int64_t c1 = std::min(b1, c0 + kPoolChunk);
        cpu::dnnl_conv_forward(d.dnnl(win, c0, c1, precision_), xp + c0 * d.c_in * d.h * d.w, wp,
                               bp, conv, nullptr, 0);
        if (!relu) cpu::apply_activation(act, conv, (c1 - c0) * d.out * d.s);
        for (int64_t b = c0; b < c1; ++b) pool_sample(b, conv + (b - c0) * d.out * d.s);
      }
    });
    return;
  }
  const Operand wp(w.data(), round_shared(w, 0));
  // With bf16 products the unfolded sample goes straight to bf16 (unfold), not through scratch.col.
  const bool bf16 = precision_ == Precision::kBfloat16;
  pool_.run([&](int t) {
    const PoolScratch scratch(work, t, d);
    const int64_t b0 = d.batch * t / threads, b1 = d.batch * (t + 1) / threads;
    for (int64_t b = b0; b < b1; ++b) {
      conv_forward_sample(precision_, win, d, xp + b * d.c_in * d.h * d.w, wp, bp,
                          relu ? Activation::kNone : act, bf16 ? nullptr : scratch.col,
                          scratch.conv);
      pool_sample(b, scratch.conv);
    }
  });
}

void CpuBackend::conv2d_pool_backward(const Window2d& win, const Tensor& x, const Tensor& w,
                                      const Tensor& y, std::span<const int32_t> argmax,
                                      Activation act, const Tensor& dy, Tensor* dx, Tensor& dw,
                                      Tensor* db, std::span<float> work) {
  const ConvDims d(win, x, w, win.out_h(x.dim(2)), win.out_w(x.dim(3)));
  const int64_t ph = dy.dim(2), pw = dy.dim(3), ps = ph * pw;
  const int threads = num_threads();
  const float* xp = x.data();
  const float* yp = y.data();
  const float* dyp = dy.data();
  float* dxp = dx ? dx->data() : nullptr;
  // 2x2 windows tile an even plane: every element of dz is written once, with its gradient or
  // zero, instead of zeroing the plane and scattering into it.
  const bool tiled = d.oh % 2 == 0 && d.ow % 2 == 0;
  // Sample b's dz[O, S] from its pooled gradient (g[O, PS]: scratch), adding its db into db_t.
  // The pooling passed each gradient to its window's maximum, whose act' is that of the pooled
  // output; every other element of the convolution's output gets zero.
  const auto unpool_sample = [&](int64_t b, float* g, float* dz, float* db_t) {
    cpu::activation_grad_from_output(act, yp + b * d.out * ps, dyp + b * d.out * ps, g, d.out * ps);
    if (!tiled) std::fill(dz, dz + d.out * d.s, 0.0f);
    for (int64_t o = 0; o < d.out; ++o) {
      const int32_t* arg = argmax.data() + (b * d.out + o) * ps;
      const float* gp = g + o * ps;
      float* plane = dz + o * d.s;
      db_t[o] += cpu::sum_fixed_order(gp, ps);
      if (tiled) {
        cpu::max_pool_2x2_backward_plane(arg, gp, ph, pw, plane);
      } else {
        for (int64_t k = 0; k < ps; ++k) plane[arg[k]] = gp[k];
      }
    }
  };
  if (!cpu_conv2d_unfolds(win, d.c_in)) {
    // As the forward: kPoolChunk samples' dz in this thread's scratch, then one oneDNN backward
    // of them, whose dw the thread's partial sums in chunk order.
    const float* wp = w.data();
    pool_.run([&](int t) {
      const PoolScratch scratch(work, t, d);
      std::fill(scratch.dw, scratch.dw + d.out * d.ckk + d.out, 0.0f);
      const int64_t b0 = d.batch * t / threads, b1 = d.batch * (t + 1) / threads;
      float* dz = pool_chunk_scratch(kPoolChunk * d.out * d.s + d.out * d.ckk);
      float* dw_chunk = dz + kPoolChunk * d.out * d.s;
      for (int64_t c0 = b0; c0 < b1; c0 += kPoolChunk) {
        const int64_t c1 = std::min(b1, c0 + kPoolChunk);
        for (int64_t b = c0; b < c1; ++b) {
          unpool_sample(b, scratch.g, dz + (b - c0) * d.out * d.s, scratch.db);
        }
        cpu::dnnl_conv_backward(d.dnnl(win, c0, c1, precision_), xp + c0 * d.c_in * d.h * d.w, wp,
                                dz, dxp ? dxp + c0 * d.c_in * d.h * d.w : nullptr, dw_chunk,
                                nullptr, 0);
        for (int64_t i = 0; i < d.out * d.ckk; ++i) scratch.dw[i] += dw_chunk[i];
      }
    });
    reduce_conv_partials(work, PoolScratch::dw_offset(d.ckk, d.s, d.out), PoolScratch::floats(d),
                         d.out, d.ckk, dw, db);
    return;
  }
  const Operand wp(w.data(), round_shared(w, 0));
  // With bf16 products the unfolded sample goes straight to bf16 (unfold), not through scratch.col.
  const bool bf16 = precision_ == Precision::kBfloat16;
  pool_.run([&](int t) {
    const PoolScratch scratch(work, t, d);
    float* dz = scratch.conv;
    std::fill(scratch.dw, scratch.dw + d.out * d.ckk + d.out, 0.0f);
    const int64_t b0 = d.batch * t / threads, b1 = d.batch * (t + 1) / threads;
    for (int64_t b = b0; b < b1; ++b) {
      unpool_sample(b, scratch.g, dz, scratch.db);
      // The unfolded input again (cheaper than keeping the batch's in memory), then the dcol of
      // dx in its place once dw has read it.
      const Operand col =
          unfold(precision_, win, d, xp + b * d.c_in * d.h * d.w, bf16 ? nullptr : scratch.col);
      conv_backward_sample(precision_, win, d, dz, col, wp, scratch.dw, scratch.col,
                           dxp ? dxp + b * d.c_in * d.h * d.w : nullptr);
    }
  });
  reduce_conv_partials(work, PoolScratch::dw_offset(d.ckk, d.s, d.out), PoolScratch::floats(d),
                       d.out, d.ckk, dw, db);
}

}  // namespace tuner::training
