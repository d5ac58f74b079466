// The CPU backend: oneDNN's, OpenBLAS's and Eigen's kernels on a fixed pool of threads.
#ifndef TUNER_TRAINING_BACKENDS_CPU_CPU_BACKEND_H_
#define TUNER_TRAINING_BACKENDS_CPU_CPU_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "training/backend.h"
#include "training/backends/cpu/thread_pool.h"

namespace tuner::training {

// Every kernel splits its output statically over the threads (rows of a product, samples of a
// convolution, channels of a norm) and never splits a reduction between threads except through
// per-thread partials summed in thread order, so results are bit-identical for a given thread
// count. Products run on single-threaded kernels inside each thread's block: OpenBLAS's where
// every extent is at least 32 and the build found it (libopenblas-dev), Eigen's otherwise. The
// bias is written into the output before the product accumulates onto it, and the activation is
// applied to the block while it is in cache (the fused epilogue). Convolutions with at least
// cpu::kMinDnnlConvChannels input channels and a kernel larger than 1x1 run on oneDNN's
// convolution primitives where the build has oneDNN (dnnl_conv.h; each thread convolves its
// samples in one call and keeps, in its samples' share of `col`, x in the layout of oneDNN's
// backward, where it fits); the others unfold each sample (im2col) into a GEMM.
// Thread safety: as Backend (one caller at a time).
class CpuBackend final : public Backend {
 public:
  // REQUIRES: threads >= 1; for Precision::kBfloat16, cpu_bf16_unavailable() empty.
  explicit CpuBackend(int threads, Precision matmul = Precision::kFloat32);

  std::string_view name() const override {
    return precision_ == Precision::kBfloat16 ? "cpu-bf16" : "cpu";
  }
  int num_threads() const override { return pool_.size(); }

  void gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b, float beta,
            Tensor& c) override;
  void linear_forward(const Tensor& x, const Tensor& w, const Tensor* bias, Activation act,
                      Tensor& y) override;
  void linear_backward(const Tensor& x, const Tensor& w, const Tensor& y, Activation act,
                       const Tensor& dy, Tensor& dz, Tensor* dx, Tensor& dw, Tensor* db) override;

  int64_t conv2d_backward_workspace(const Window2d& win, const Shape& x,
                                    int64_t out_channels) const override;
  void conv2d_forward(const Window2d& win, const Tensor& x, const Tensor& w, const Tensor* bias,
                      Activation act, Tensor& col, Tensor& y) override;
  void conv2d_backward(const Window2d& win, const Tensor& x, const Tensor& w, const Tensor& col,
                       const Tensor& y, Activation act, const Tensor& dy, Tensor& dz, Tensor* dx,
                       Tensor& dw, Tensor* db, std::span<float> work) override;
  int64_t conv2d_pool_workspace(const Window2d& win, const Shape& x,
                                int64_t out_channels) const override;
  void conv2d_pool_forward(const Window2d& win, const Tensor& x, const Tensor& w,
                           const Tensor* bias, Activation act, Tensor& y, std::span<int32_t> argmax,
                           std::span<float> work) override;
  void conv2d_pool_backward(const Window2d& win, const Tensor& x, const Tensor& w, const Tensor& y,
                            std::span<const int32_t> argmax, Activation act, const Tensor& dy,
                            Tensor* dx, Tensor& dw, Tensor* db, std::span<float> work) override;

  void max_pool2d_forward(const Window2d& win, const Tensor& x, Tensor& y,
                          std::span<int32_t> argmax) override;
  void max_pool2d_backward(const Window2d& win, std::span<const int32_t> argmax, const Tensor& dy,
                           Tensor& dx) override;
  void avg_pool2d_forward(const Window2d& win, const Tensor& x, Tensor& y) override;
  void avg_pool2d_backward(const Window2d& win, const Tensor& dy, Tensor& dx) override;
  void global_avg_pool_forward(const Tensor& x, Tensor& y) override;
  void global_avg_pool_backward(const Tensor& dy, Tensor& dx) override;

  void activation_forward(Activation act, const Tensor& x, Tensor& y) override;
  void activation_backward(Activation act, const Tensor& x, const Tensor& y, const Tensor& dy,
                           Tensor& dx) override;
  void dropout_forward(float p, uint64_t seed, const Tensor& x, Tensor& mask, Tensor& y) override;
  void mul(const Tensor& a, const Tensor& b, Tensor& y) override;
  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
  void copy(const Tensor& x, Tensor& y) override;

  void batch_norm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                float momentum, Tensor& running_mean, Tensor& running_var,
                                Tensor& mean, Tensor& rstd, Tensor& y) override;
  void batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                               const Tensor& running_mean, const Tensor& running_var,
                               Tensor& y) override;
  void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                           const Tensor& rstd, const Tensor& dy, Tensor* dx, Tensor& dgamma,
                           Tensor& dbeta) override;
  // One pass for the pair: the ReLU applied as the normalized values are stored, and the
  // backward's mask read from y in both of its passes (no workspace).
  void batch_norm_relu_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                     float eps, float momentum, Tensor& running_mean,
                                     Tensor& running_var, Tensor& mean, Tensor& rstd,
                                     Tensor& y) override;
  void batch_norm_relu_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    float eps, const Tensor& running_mean,
                                    const Tensor& running_var, Tensor& y) override;
  int64_t batch_norm_relu_workspace(const Shape& /*x*/) const override { return 0; }
  void batch_norm_relu_backward(const Tensor& x, const Tensor& y, const Tensor& gamma,
                                const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                                Tensor* dx, Tensor& dgamma, Tensor& dbeta,
                                std::span<float> work) override;
  // The triple in one pass over each channel's planes: each normalized plane is pooled while it
  // is in cache, and the backward rebuilds a channel's gradient at the ReLU's output from the
  // pooled y, argmax and dy into the thread's scratch instead of a full-size one. The results
  // are the ops' in turn to the bit. Workspace per thread: a channel's planes and a pooled plane.
  int64_t batch_norm_relu_pool_workspace(const Shape& x) const override;
  void batch_norm_relu_pool_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          float eps, float momentum, Tensor& running_mean,
                                          Tensor& running_var, Tensor& mean, Tensor& rstd,
                                          Tensor& y, std::span<int32_t> argmax,
                                          std::span<float> work) override;
  void batch_norm_relu_pool_backward(const Tensor& x, const Tensor& y,
                                     std::span<const int32_t> argmax, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                                     Tensor* dx, Tensor& dgamma, Tensor& dbeta,
                                     std::span<float> work) override;
  void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                          Tensor& mean, Tensor& rstd, Tensor& y) override;
  void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                           const Tensor& rstd, const Tensor& dy, Tensor* dx, Tensor& dgamma,
                           Tensor& dbeta) override;

  float softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels,
                              float label_smoothing, Tensor* dlogits) override;
  float mean_squared_error(const Tensor& pred, const Tensor& target, Tensor* dpred) override;

  void sgd_step(const SgdStepArgs& args, std::span<float> params, std::span<const float> grads,
                std::span<float> velocity) override;
  void adam_step(const AdamStepArgs& args, std::span<float> params, std::span<const float> grads,
                 std::span<float> m, std::span<float> v) override;
  double sum_squares(std::span<const float> x) override;
  void scale(std::span<float> x, float factor) override;

 private:
  // dw[O,CKK] and db[O] (skipped when nullptr) = the sums in thread order of the per-thread
  // partials at work[offset + t * per_thread], laid out dw then db.
  void reduce_conv_partials(std::span<const float> work, int64_t offset, int64_t per_thread,
                            int64_t out, int64_t ckk, Tensor& dw, Tensor* db);

  // With bf16 products: t rounded to bf16 by every thread, into rounded_[slot] (same layout as t);
  // what the threads then read for an operand they share (weights, an input split across them),
  // instead of each rounding it. nullptr with fp32 products.
  const uint16_t* round_shared(const Tensor& t, int slot);

  // Batch norm, with the ReLU after it or not (cpu_batch_norm.cc).
  void batch_norm_train(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                        float momentum, Tensor& running_mean, Tensor& running_var, Tensor& mean,
                        Tensor& rstd, Tensor& y, bool relu);
  void batch_norm_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                       const Tensor& running_mean, const Tensor& running_var, Tensor& y, bool relu);
  // relu_y: the pair's output when the ReLU is fused (dy counts where it is > 0), else nullptr.
  void batch_norm_grad(const Tensor& x, const Tensor* relu_y, const Tensor& gamma,
                       const Tensor& mean, const Tensor& rstd, const Tensor& dy, Tensor* dx,
                       Tensor& dgamma, Tensor& dbeta);

  ThreadPool pool_;
  const Precision precision_;
  std::vector<uint16_t> rounded_[3];  // round_shared's copies; keep their largest size
  // One partial sum per thread, summed in thread order (deterministic reductions).
  std::vector<double> partials_;
};

// True when the CPU backend's conv2d_forward unfolds x[B,C,H,W] (C = in_channels) into `col`
// (im2col + GEMM); false where the convolution runs on oneDNN's primitives.
bool cpu_conv2d_unfolds(const Window2d& win, int64_t in_channels);

// Empty when this CPU and build can run a CPU backend with bf16 products; else why not ("this CPU
// (...) has neither AMX nor AVX512-BF16", or a build without oneDNN).
std::string cpu_bf16_unavailable();

// A CPU backend on `threads` threads (REQUIRES: threads >= 1) whose matrix products read their
// inputs in `matmul` precision. kBfloat16 is autocast-style mixed precision, as the CUDA
// backend's: each product rounds its two inputs to bf16 (to nearest, ties to even) and
// accumulates in fp32 on oneDNN's AMX or AVX512-BF16 kernels; tensors, gradients, master weights,
// optimizer state and every other kernel stay fp32. Such a backend reports name() "cpu-bf16".
// Throws std::runtime_error with cpu_bf16_unavailable()'s reason where bf16 cannot run.
std::unique_ptr<Backend> make_cpu_backend(int threads, Precision matmul = Precision::kFloat32);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_BACKENDS_CPU_CPU_BACKEND_H_
