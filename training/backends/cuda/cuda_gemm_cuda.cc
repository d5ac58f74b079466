// The CUDA backend's matrix products: GEMM, linear and convolution (im2col + strided-batched
// cuBLAS, with fused element-wise epilogues and deterministic reductions), in fp32 or with bf16
// inputs (gemm_rows_bf16); with Convolution::kCudnn the convolutions' products are cuDNN's
// (cudnn_conv.h) between the same epilogues.
#include <algorithm>
#include <climits>

#include "training/backends/cuda/cuda_backend_impl.h"
#include "training/backends/cuda/cudnn_conv.h"

namespace tuner::training {
namespace {

int to_int(int64_t v, const char* op, const char* what) {
  if (v < 0 || v > INT_MAX) {
    throw std::invalid_argument(std::string("cuda backend: ") + op + ": " + what + " = " +
                                std::to_string(v) + " does not fit cuBLAS's int");
  }
  return static_cast<int>(v);
}

cuda::Window window_of(const Window2d& w) { return {w.kernel_h, w.kernel_w, w.stride, w.padding}; }

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// Row length of a bf16 copy: a multiple of 8 elements (16 bytes), as the tensor-core kernels of
// cuBLAS want their leading dimensions; at least 8, so cuBLAS's ld >= 1 holds for empty rows.
int64_t bf16_ld(int64_t cols) { return round_up(std::max<int64_t>(cols, 1), 8); }

// Offsets inside the bf16 scratch start on this many bytes (cuBLAS wants 16; more is free).
constexpr int64_t kBf16Align = 256;

}  // namespace

void CudaBackend::gemm_rows(const char* op, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                            float alpha, const float* a, int64_t lda, int64_t stride_a,
                            const float* b, int64_t ldb, int64_t stride_b, float beta, float* c,
                            int64_t ldc, int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (options_.matmul == Precision::kBfloat16) {
    gemm_rows_bf16(op, ta, tb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                   stride_c, batch);
    return;
  }
  // Row-major X[r, s] with row length ld is column-major X^T with leading dimension ld, so
  // c^T[n, m] = op(b)^T[n, k] op(a)^T[k, m]: cuBLAS gets b first, with the same transposes.
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int im = to_int(m, op, "m"), in = to_int(n, op, "n"), ik = to_int(k, op, "k");
  const int ilda = to_int(std::max<int64_t>(lda, 1), op, "lda");
  const int ildb = to_int(std::max<int64_t>(ldb, 1), op, "ldb");
  const int ildc = to_int(std::max<int64_t>(ldc, 1), op, "ldc");
  auto shapes = [&] {
    return cuda::args("m", m, "n", n, "k", k, "ta", int64_t{ta}, "tb", int64_t{tb}, "batch", batch);
  };
  if (batch == 1) {
    TUNER_CUBLAS_CHECK(cublasSgemm(cublas_.get(), op_b, op_a, in, im, ik, &alpha, b, ildb, a, ilda,
                                   &beta, c, ildc),
                       op, shapes());
  } else {
    TUNER_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas_.get(), op_b, op_a, in, im, ik, &alpha, b,
                                                 ildb, stride_b, a, ilda, stride_a, &beta, c, ildc,
                                                 stride_c, to_int(batch, op, "batch")),
                       op, shapes());
  }
}

void CudaBackend::gemm_rows_bf16(const char* op, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                 float alpha, const float* a, int64_t lda, int64_t stride_a,
                                 const float* b, int64_t ldb, int64_t stride_b, float beta,
                                 float* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  auto shapes = [&] {
    return cuda::args("m", m, "n", n, "k", k, "ta", int64_t{ta}, "tb", int64_t{tb}, "batch", batch,
                      "bf16", int64_t{1});
  };
  // The stored matrices: a is [k, m] when transposed, else [m, k]; b is [n, k] or [k, n]. A
  // stride of 0 means one matrix shared by the whole batch, rounded once.
  cuda::Bf16Operand ops[2] = {
      {a, lda, stride_a, nullptr, 0, ta ? k : m, ta ? m : k, stride_a == 0 ? 1 : batch},
      {b, ldb, stride_b, nullptr, 0, tb ? n : k, tb ? k : n, stride_b == 0 ? 1 : batch},
  };
  int64_t bytes = 0;
  int64_t offset[2];
  for (int i = 0; i < 2; ++i) {
    ops[i].dst_ld = bf16_ld(ops[i].cols);
    offset[i] = bytes;
    bytes += round_up(ops[i].matrices * ops[i].rows * ops[i].dst_ld * 2, kBf16Align);
  }
  // Grows only while the shapes of the first step are new (it waits for the stream then).
  auto* base = static_cast<char*>(
      bf16_.reserve(static_cast<size_t>(std::max(bytes, kBf16Align)), stream_.get(), op));
  for (int i = 0; i < 2; ++i) ops[i].dst = reinterpret_cast<uint16_t*>(base + offset[i]);
  TUNER_CUDA_CHECK(cuda::launch_to_bf16(ops, 2, stream_.get()), op, shapes());

  // As gemm_rows: cuBLAS computes c^T[n, m] = op(b)^T op(a)^T on the column-major views.
  const cuda::Bf16Operand& a16 = ops[0];
  const cuda::Bf16Operand& b16 = ops[1];
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int im = to_int(m, op, "m"), in = to_int(n, op, "n"), ik = to_int(k, op, "k");
  const int ilda = to_int(a16.dst_ld, op, "lda (bf16)");
  const int ildb = to_int(b16.dst_ld, op, "ldb (bf16)");
  const int ildc = to_int(std::max<int64_t>(ldc, 1), op, "ldc");
  if (batch == 1) {
    TUNER_CUBLAS_CHECK(cublasGemmEx(cublas_.get(), op_b, op_a, in, im, ik, &alpha, b16.dst,
                                    CUDA_R_16BF, ildb, a16.dst, CUDA_R_16BF, ilda, &beta, c,
                                    CUDA_R_32F, ildc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       op, shapes());
  } else {
    const long long sa = stride_a == 0 ? 0 : a16.rows * a16.dst_ld;
    const long long sb = stride_b == 0 ? 0 : b16.rows * b16.dst_ld;
    TUNER_CUBLAS_CHECK(
        cublasGemmStridedBatchedEx(cublas_.get(), op_b, op_a, in, im, ik, &alpha, b16.dst,
                                   CUDA_R_16BF, ildb, sb, a16.dst, CUDA_R_16BF, ilda, sa, &beta, c,
                                   CUDA_R_32F, ildc, stride_c, to_int(batch, op, "batch"),
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        op, shapes());
  }
}

void CudaBackend::gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b,
                       float beta, Tensor& c) {
  const bool at = ta == Transpose::kYes, bt = tb == Transpose::kYes;
  const int64_t m = c.dim(0), n = c.dim(1), k = at ? a.dim(0) : a.dim(1);
  gemm_rows("gemm", at, bt, m, n, k, alpha, a.data(), a.dim(1), 0, b.data(), b.dim(1), 0, beta,
            c.data(), n, 0, 1);
}

void CudaBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor* bias,
                                 Activation act, Tensor& y) {
  const int64_t batch = x.dim(0), in = x.dim(1), out = w.dim(0);
  // y[B,O] = x[B,I] w[O,I]^T
  gemm_rows("linear_forward", false, true, batch, out, in, 1.0f, x.data(), in, 0, w.data(), in, 0,
            0.0f, y.data(), out, 0, 1);
  if (bias == nullptr && act == Activation::kNone) return;
  TUNER_CUDA_CHECK(cuda::launch_bias_activation_rows(y.data(), bias ? bias->data() : nullptr, batch,
                                                     out, static_cast<int>(act), stream_.get()),
                   "linear_forward", cuda::args("x", x, "w", w, "bias", bias, "y", y));
}

void CudaBackend::linear_backward(const Tensor& x, const Tensor& w, const Tensor& y, Activation act,
                                  const Tensor& dy, Tensor& dz, Tensor* dx, Tensor& dw,
                                  Tensor* db) {
  const char* op = "linear_backward";
  const int64_t batch = x.dim(0), in = x.dim(1), out = w.dim(0);
  // One pass over dy: dz = dy * act'(y) and db = column sums of dz.
  if (act != Activation::kNone || db != nullptr) {
    TUNER_CUDA_CHECK(
        cuda::launch_dz_column_sum(dz.data(), db ? db->data() : nullptr, y.data(), dy.data(), batch,
                                   out, static_cast<int>(act), stream_.get()),
        op, cuda::args("x", x, "w", w, "y", y, "dy", dy, "dz", dz, "db", db));
  }
  const float* g = act != Activation::kNone ? dz.data() : dy.data();
  // dw[O,I] = g[B,O]^T x[B,I]
  gemm_rows(op, true, false, out, in, batch, 1.0f, g, out, 0, x.data(), in, 0, 0.0f, dw.data(), in,
            0, 1);
  // dx[B,I] = g[B,O] w[O,I]
  if (dx != nullptr) {
    gemm_rows(op, false, false, batch, in, out, 1.0f, g, out, 0, w.data(), in, 0, 0.0f, dx->data(),
              in, 0, 1);
  }
}

// Workspace of conv2d_backward: per-sample partials [B, O*CKK + O] of dw and db (summed over the
// batch in a fixed order afterwards), then dcol[B, CKK, S] for dx. With cuDNN, only the partials
// [B, O] of db (cuDNN's own workspace is backend scratch).
int64_t CudaBackend::conv2d_backward_workspace(const Window2d& win, const Shape& x,
                                               int64_t out_channels) const {
  if (cudnn_ != nullptr) return x[0] * out_channels;
  const int64_t batch = x[0], ckk = x[1] * win.kernel_h * win.kernel_w;
  const int64_t s = win.out_h(x[2]) * win.out_w(x[3]);
  return batch * (out_channels * ckk + out_channels) + batch * ckk * s;
}

void CudaBackend::conv2d_forward(const Window2d& win, const Tensor& x, const Tensor& w,
                                 const Tensor* bias, Activation act, Tensor& col, Tensor& y) {
  const char* op = "conv2d_forward";
  const int64_t batch = x.dim(0), c_in = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t out = w.dim(0), oh = y.dim(2), ow = y.dim(3), s = oh * ow;
  const int64_t ckk = c_in * win.kernel_h * win.kernel_w;
  if (cudnn_ != nullptr) {
    cudnn_->forward(win, x, w, y);  // col stays unwritten: cuDNN's backward does not read it
  } else {
    TUNER_CUDA_CHECK(cuda::launch_im2col(col.data(), x.data(), batch, c_in, h, wd, oh, ow,
                                         window_of(win), stream_.get()),
                     op, cuda::args("x", x, "w", w, "col", col, "y", y));
    // y_b[O,S] = w[O,CKK] col_b[CKK,S] for every sample b (w shared).
    gemm_rows(op, false, false, out, s, ckk, 1.0f, w.data(), ckk, 0, col.data(), s, ckk * s, 0.0f,
              y.data(), s, out * s, batch);
  }
  if (bias == nullptr && act == Activation::kNone) return;
  TUNER_CUDA_CHECK(
      cuda::launch_bias_activation_planes(y.data(), bias ? bias->data() : nullptr, batch, out, s,
                                          static_cast<int>(act), stream_.get()),
      op, cuda::args("x", x, "w", w, "bias", bias, "y", y));
}

void CudaBackend::conv2d_backward(const Window2d& win, const Tensor& x, const Tensor& w,
                                  const Tensor& col, const Tensor& y, Activation act,
                                  const Tensor& dy, Tensor& dz, Tensor* dx, Tensor& dw, Tensor* db,
                                  std::span<float> work) {
  const char* op = "conv2d_backward";
  const int64_t batch = x.dim(0), c_in = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t out = w.dim(0), oh = dy.dim(2), ow = dy.dim(3), s = oh * ow;
  const int64_t ckk = c_in * win.kernel_h * win.kernel_w;
  const int64_t need = conv2d_backward_workspace(win, x.shape(), out);
  if (static_cast<int64_t>(work.size()) < need) {
    throw std::invalid_argument("cuda backend: conv2d_backward: workspace of " +
                                std::to_string(work.size()) + " floats, needs " +
                                std::to_string(need) + " for x" + x.shape().to_string() +
                                " (size it with conv2d_backward_workspace)");
  }
  if (cudnn_ != nullptr) {
    conv2d_backward_cudnn(win, x, w, y, act, dy, dz, dx, dw, db, work);
    return;
  }
  const int64_t part_stride = out * ckk + out;  // one sample's [dw | db] partials
  float* part = work.data();
  float* dcol = part + batch * part_stride;
  auto shapes = [&] {
    return cuda::args("x", x, "w", w, "col", col, "dy", dy, "dx", dx, "db", db);
  };

  // dz = dy * act'(y) and, per sample and channel, the sum over S (db's partials).
  if (act != Activation::kNone || db != nullptr) {
    TUNER_CUDA_CHECK(
        cuda::launch_dz_plane_sum(dz.data(), db ? part + out * ckk : nullptr, part_stride, y.data(),
                                  dy.data(), batch, out, s, static_cast<int>(act), stream_.get()),
        op, shapes());
  }
  const float* g = act != Activation::kNone ? dz.data() : dy.data();
  // part_b[O,CKK] = g_b[O,S] col_b[CKK,S]^T for every sample b.
  gemm_rows(op, false, true, out, ckk, s, 1.0f, g, s, out * s, col.data(), s, ckk * s, 0.0f, part,
            ckk, part_stride, batch);
  // dw (and db) = the partials summed over the batch in sample order.
  TUNER_CUDA_CHECK(
      cuda::launch_sum_over_batch(dw.data(), out * ckk, db ? db->data() : nullptr, db ? out : 0,
                                  part, batch, part_stride, stream_.get()),
      op, shapes());
  if (dx == nullptr) return;
  // dcol_b[CKK,S] = w[O,CKK]^T g_b[O,S], then each pixel of dx gathers its windows.
  gemm_rows(op, true, false, ckk, s, out, 1.0f, w.data(), ckk, 0, g, s, out * s, 0.0f, dcol, s,
            ckk * s, batch);
  TUNER_CUDA_CHECK(cuda::launch_col2im(dx->data(), dcol, batch, c_in, h, wd, oh, ow, window_of(win),
                                       stream_.get()),
                   op, shapes());
}

void CudaBackend::conv2d_backward_cudnn(const Window2d& win, const Tensor& x, const Tensor& w,
                                        const Tensor& y, Activation act, const Tensor& dy,
                                        Tensor& dz, Tensor* dx, Tensor& dw, Tensor* db,
                                        std::span<float> work) {
  const char* op = "conv2d_backward";
  const int64_t batch = x.dim(0), out = w.dim(0), s = dy.dim(2) * dy.dim(3);
  float* part = work.data();  // [B, O]: per sample and channel, the sum over S of dz
  auto shapes = [&] { return cuda::args("x", x, "w", w, "dy", dy, "dx", dx, "db", db); };
  // dz = dy * act'(y) and db's partials in one pass, as the GEMM path does.
  if (act != Activation::kNone || db != nullptr) {
    TUNER_CUDA_CHECK(
        cuda::launch_dz_plane_sum(dz.data(), db ? part : nullptr, out, y.data(), dy.data(), batch,
                                  out, s, static_cast<int>(act), stream_.get()),
        op, shapes());
  }
  const Tensor& g = act != Activation::kNone ? dz : dy;
  cudnn_->backward_filter(win, x, g, dw);
  if (db != nullptr) {
    // db = the partials summed over the batch in sample order.
    TUNER_CUDA_CHECK(
        cuda::launch_sum_over_batch(db->data(), out, nullptr, 0, part, batch, out, stream_.get()),
        op, shapes());
  }
  if (dx != nullptr) cudnn_->backward_data(win, w, g, *dx);
}

}  // namespace tuner::training
