// Launchers of the CUDA backend's kernels (internal). C++17 so that both nvcc (the .cu files) and
// the C++20 host code include it; raw device pointers and int64_t sizes, no engine types.
//
// Every launcher enqueues its kernels on `s` and returns cudaGetLastError() (a launch error, e.g.
// an invalid configuration), never waits. Every reduction has a fixed order that depends on the
// sizes only, so equal inputs give bit-identical outputs. Shapes follow training/tensor.h.
#ifndef TUNER_TRAINING_BACKENDS_CUDA_KERNELS_H_
#define TUNER_TRAINING_BACKENDS_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace tuner::training::cuda {

// Mirrors tuner::training::Activation (checked by a static_assert in the host code).
enum ActCode : int { kActNone = 0, kActRelu = 1, kActGelu = 2, kActTanh = 3, kActSigmoid = 4 };

// Blocks of the reductions that return one value (their partials live in a scratch array).
inline constexpr int kMaxReduceBlocks = 1024;

// Scratch of the value-returning reductions: partials[kMaxReduceBlocks], a block counter that is
// zero between launches (the last block resets it), and the result.
struct ReduceScratch {
  double* partials;
  unsigned int* counter;
  double* result;
};

// ---- Element-wise (elementwise.cu) ----
// y[rows, cols] = act(y + bias[cols]) in place; bias may be nullptr.
cudaError_t launch_bias_activation_rows(float* y, const float* bias, int64_t rows, int64_t cols,
                                        int act, cudaStream_t s);
// y[B, O, S] = act(y + bias[O]) in place (a convolution's output planes); bias may be nullptr.
cudaError_t launch_bias_activation_planes(float* y, const float* bias, int64_t batch,
                                          int64_t channels, int64_t spatial, int act,
                                          cudaStream_t s);
// y[n] = act(x[n]); y may alias x.
cudaError_t launch_activation_forward(float* y, const float* x, int64_t n, int act, cudaStream_t s);
// dx[n] = dy * act'(.): from x for gelu, else from y.
cudaError_t launch_activation_backward(float* dx, const float* x, const float* y, const float* dy,
                                       int64_t n, int act, cudaStream_t s);
// The CPU's dropout: key = mix64(seed), keep when (mix64(key ^ i) >> 40) >= threshold.
cudaError_t launch_dropout(float* y, float* mask, const float* x, int64_t n, uint64_t key,
                           uint64_t threshold, float keep_scale, cudaStream_t s);
cudaError_t launch_mul(float* y, const float* a, const float* b, int64_t n, cudaStream_t s);
cudaError_t launch_add(float* y, const float* a, const float* b, int64_t n, cudaStream_t s);
cudaError_t launch_scale(float* x, float factor, int64_t n, cudaStream_t s);
// Linear backward's epilogue over dy[rows, cols]: dz = dy * act'(y) (written when act != none)
// and db[cols] = sum over rows of dz (when db != nullptr).
cudaError_t launch_dz_column_sum(float* dz, float* db, const float* y, const float* dy,
                                 int64_t rows, int64_t cols, int act, cudaStream_t s);

// ---- bf16 operands of the mixed-precision products (bf16_convert.cu) ----
// One GEMM operand to round to bf16: `matrices` row-major float matrices [rows, cols] with row
// length src_ld, src_stride floats apart, written as dst[matrices, rows, dst_ld] of bf16 bit
// patterns (uint16_t) with columns [cols, dst_ld) zeroed.
// REQUIRES: dst 16-byte aligned; dst_ld a multiple of 8 and >= cols.
struct Bf16Operand {
  const float* src;
  int64_t src_ld, src_stride;
  uint16_t* dst;
  int64_t dst_ld;
  int64_t rows, cols, matrices;
};
// Rounds `count` (1 or 2) operands to the nearest bf16 (ties to even; NaN stays NaN), all in one
// launch. cudaErrorInvalidValue when count or an operand breaks the REQUIRES above.
cudaError_t launch_to_bf16(const Bf16Operand* ops, int count, cudaStream_t s);

// ---- Optimizers (elementwise.cu), the CPU's formulas on flat arrays ----
cudaError_t launch_sgd(float* params, const float* grads, float* velocity, int64_t n, float lr,
                       float momentum, float dampening, float weight_decay, bool nesterov,
                       bool first_step, cudaStream_t s);
cudaError_t launch_adam(float* params, const float* grads, float* m, float* v, int64_t n,
                        float beta1, float beta2, float eps, float step_size, float inv_sqrt_bc2,
                        float decay, float l2, cudaStream_t s);

// ---- Convolution and pooling (conv_pool.cu); windows as Window2d ----
struct Window {
  int64_t kernel_h, kernel_w, stride, padding;
};
// col[B, C*KH*KW, OH*OW] = unfolded x[B, C, H, W] (zeros where the window is in the padding).
cudaError_t launch_im2col(float* col, const float* x, int64_t batch, int64_t channels, int64_t h,
                          int64_t w, int64_t oh, int64_t ow, Window win, cudaStream_t s);
// dx[B, C, H, W] = sum of dcol[B, C*KH*KW, OH*OW] over the windows of each pixel (a gather).
cudaError_t launch_col2im(float* dx, const float* dcol, int64_t batch, int64_t channels, int64_t h,
                          int64_t w, int64_t oh, int64_t ow, Window win, cudaStream_t s);
// Per plane p = b*O + o of dy[B, O, S]: dz = dy * act'(y) (written when act != none) and, when
// sums != nullptr, sums[b * sums_stride + o] = sum over S of dz.
cudaError_t launch_dz_plane_sum(float* dz, float* sums, int64_t sums_stride, const float* y,
                                const float* dy, int64_t batch, int64_t channels, int64_t spatial,
                                int act, cudaStream_t s);
// The sum over b (in order) of part[b * stride + j] for j in [0, n + n2): into out[j] for j < n,
// into out2[j - n] after (out2 may be nullptr when n2 == 0).
cudaError_t launch_sum_over_batch(float* out, int64_t n, float* out2, int64_t n2, const float* part,
                                  int64_t batch, int64_t stride, cudaStream_t s);
// Max pooling of x[P, H, W] (P = B*C planes): y[P, OH, OW], argmax flat in the H*W plane.
cudaError_t launch_max_pool_forward(float* y, int32_t* argmax, const float* x, int64_t planes,
                                    int64_t h, int64_t w, int64_t oh, int64_t ow, Window win,
                                    cudaStream_t s);
cudaError_t launch_max_pool_backward(float* dx, const int32_t* argmax, const float* dy,
                                     int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                                     Window win, cudaStream_t s);
cudaError_t launch_avg_pool_forward(float* y, const float* x, int64_t planes, int64_t h, int64_t w,
                                    int64_t oh, int64_t ow, Window win, cudaStream_t s);
cudaError_t launch_avg_pool_backward(float* dx, const float* dy, int64_t planes, int64_t h,
                                     int64_t w, int64_t oh, int64_t ow, Window win, cudaStream_t s);
// y[P] = mean of x[P, S]; backward dx[P, S] = dy[P] / S.
cudaError_t launch_global_avg_pool_forward(float* y, const float* x, int64_t planes,
                                           int64_t spatial, cudaStream_t s);
cudaError_t launch_global_avg_pool_backward(float* dx, const float* dy, int64_t planes,
                                            int64_t spatial, cudaStream_t s);

// ---- Normalization (norm.cu); x[B, C, S] for batch norm, x[N, D] for layer norm ----
cudaError_t launch_batch_norm_train(float* y, float* mean, float* rstd, float* running_mean,
                                    float* running_var, const float* x, const float* gamma,
                                    const float* beta, int64_t batch, int64_t channels,
                                    int64_t spatial, float eps, float momentum, cudaStream_t s);
cudaError_t launch_batch_norm_eval(float* y, const float* x, const float* gamma, const float* beta,
                                   const float* running_mean, const float* running_var,
                                   int64_t batch, int64_t channels, int64_t spatial, float eps,
                                   cudaStream_t s);
// dx may be nullptr.
cudaError_t launch_batch_norm_backward(float* dx, float* dgamma, float* dbeta, const float* x,
                                       const float* gamma, const float* mean, const float* rstd,
                                       const float* dy, int64_t batch, int64_t channels,
                                       int64_t spatial, cudaStream_t s);
cudaError_t launch_layer_norm_forward(float* y, float* mean, float* rstd, const float* x,
                                      const float* gamma, const float* beta, int64_t rows,
                                      int64_t d, float eps, cudaStream_t s);
// dx may be nullptr.
cudaError_t launch_layer_norm_backward(float* dx, float* dgamma, float* dbeta, const float* x,
                                       const float* gamma, const float* mean, const float* rstd,
                                       const float* dy, int64_t rows, int64_t d, cudaStream_t s);

// ---- Losses and reductions to one value (loss.cu); the value lands in scratch.result ----
// Sum over rows of the smoothed cross-entropy of logits[B, K] (not yet divided by B);
// dlogits (may be nullptr) = (softmax - target) / B.
cudaError_t launch_softmax_cross_entropy(ReduceScratch scratch, float* dlogits, const float* logits,
                                         const int32_t* labels, int64_t batch, int64_t classes,
                                         float label_smoothing, cudaStream_t s);
// Sum of (pred - target)^2 over n; dpred (may be nullptr) = 2 (pred - target) / n.
cudaError_t launch_squared_error(ReduceScratch scratch, float* dpred, const float* pred,
                                 const float* target, int64_t n, cudaStream_t s);
// Sum of x^2 over n, in double.
cudaError_t launch_sum_squares(ReduceScratch scratch, const float* x, int64_t n, cudaStream_t s);

}  // namespace tuner::training::cuda

#endif  // TUNER_TRAINING_BACKENDS_CUDA_KERNELS_H_
