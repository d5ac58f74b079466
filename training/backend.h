// The interface every op of the engine dispatches through, one implementation per device
// (backends/cpu today; CUDA later). Layers check shapes at their boundary, then call exactly one
// or two of these kernels; kernels may assume the shapes their comment states.
//
// Shapes use the legend of training/tensor.h. Every tensor argument is contiguous row-major.
// Kernels write their outputs (they never accumulate into them) unless a comment says otherwise.
// Given the same inputs and the same thread count, every kernel gives bit-identical results.
#ifndef TUNER_TRAINING_BACKEND_H_
#define TUNER_TRAINING_BACKEND_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "training/tensor.h"

namespace tuner::training {

enum class Activation { kNone, kRelu, kGelu, kTanh, kSigmoid };
std::string_view activation_name(Activation act);
// True when act' can be computed from the activation's output alone (none, relu, tanh,
// sigmoid), which is what the fused GEMM epilogues need.
bool activation_fusable(Activation act);

enum class Transpose { kNo, kYes };

// The element type a backend's matrix products read their inputs in: fp32, or bf16 (each
// product rounds its two inputs to bf16 and accumulates in fp32; everything else stays fp32).
enum class Precision { kFloat32, kBfloat16 };

// Geometry of a 2-D convolution or pooling window over NCHW input.
struct Window2d {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  // Output extent for an input extent; <= 0 when the window does not fit.
  int64_t out_h(int64_t h) const { return (h + 2 * padding - kernel_h) / stride + 1; }
  int64_t out_w(int64_t w) const { return (w + 2 * padding - kernel_w) / stride + 1; }
};

// Hyperparameters of one SGD step (PyTorch's torch.optim.SGD semantics).
struct SgdStepArgs {
  float lr = 0.01f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;  // L2, added to the gradient
  bool nesterov = false;
  bool first_step = false;  // the velocity buffer is initialized to the gradient
};

// Hyperparameters of one Adam / AdamW step (torch.optim.Adam and AdamW semantics).
struct AdamStepArgs {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = false;  // AdamW: p -= lr * wd * p instead of adding wd * p to the gradient
  int64_t step = 1;        // 1-based, for the bias corrections
};

// Thread safety: a Backend is used by one thread at a time (it owns its worker threads and
// scratch). Use one per training process.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  virtual int num_threads() const = 0;

  // ---- Memory ----
  // The tensors and flat arrays passed to this backend's kernels live in its memory: host memory
  // on the CPU, device memory on a GPU. Layers, models and optimizers allocate through allocate();
  // host code moves values in and out with upload() and download() only.
  //
  // A zero-filled contiguous tensor in this backend's memory.
  virtual Tensor allocate(const Shape& shape) { return Tensor(shape); }
  // True when host code may dereference memory from allocate() (the CPU backend).
  virtual bool host_accessible() const { return true; }
  // dst = host values. REQUIRES: host.size() == dst.size(); dst in this backend's memory.
  virtual void upload(std::span<const float> host, std::span<float> dst);
  // host = src, after every kernel launched before has finished writing it.
  // REQUIRES: src.size() == host.size(); src in this backend's memory.
  virtual void download(std::span<const float> src, std::span<float> host);
  // Waits for every kernel launched so far (a no-op on the CPU, whose kernels are synchronous).
  virtual void synchronize() {}

  // ---- Matrix products ----
  // c[M,N] = alpha * op(a) * op(b) + beta * c, op(a)[M,K], op(b)[K,N]. All 2-D.
  virtual void gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b,
                    float beta, Tensor& c) = 0;
  // y[B,O] = act(x[B,I] * w[O,I]^T + bias[O]); bias may be nullptr. REQUIRES: fusable act.
  virtual void linear_forward(const Tensor& x, const Tensor& w, const Tensor* bias, Activation act,
                              Tensor& y) = 0;
  // Backward of linear_forward given its output y[B,O] and dy[B,O]: dz[B,O] = dy * act'(y)
  // (workspace, unused when act is none), dx[B,I] = dz w (skipped when nullptr),
  // dw[O,I] = dz^T x, db[O] = sum_B dz (skipped when nullptr).
  virtual void linear_backward(const Tensor& x, const Tensor& w, const Tensor& y, Activation act,
                               const Tensor& dy, Tensor& dz, Tensor* dx, Tensor& dw,
                               Tensor* db) = 0;

  // ---- Convolution (im2col + GEMM per sample, or a library's convolution kernels) ----
  // Floats of workspace that conv2d_backward needs for input x[B,C,H,W] and weights [O,C,KH,KW].
  virtual int64_t conv2d_backward_workspace(const Window2d& win, const Shape& x,
                                            int64_t out_channels) const = 0;
  // y[B,O,OH,OW] = act(conv(x[B,C,H,W], w[O,C,KH,KW]) + bias[O]); col[B, C*KH*KW, OH*OW] receives
  // the unfolded input where the convolution unfolds it (im2col), which conv2d_backward reuses. A
  // convolution that does not unfold may leave col unwritten (cuDNN's) or keep there what its
  // backward reads (oneDNN's on the CPU: x in oneDNN's layout, cpu_backend.h).
  virtual void conv2d_forward(const Window2d& win, const Tensor& x, const Tensor& w,
                              const Tensor* bias, Activation act, Tensor& col, Tensor& y) = 0;
  // dz[B,O,OH,OW] = dy * act'(y) (workspace, unused when act is none); dx[B,C,H,W] (skipped when
  // nullptr); dw[O,C,KH,KW]; db[O] (skipped when nullptr); work: conv2d_backward_workspace floats.
  virtual void conv2d_backward(const Window2d& win, const Tensor& x, const Tensor& w,
                               const Tensor& col, const Tensor& y, Activation act, const Tensor& dy,
                               Tensor& dz, Tensor* dx, Tensor& dw, Tensor* db,
                               std::span<float> work) = 0;

  // ---- Convolution, activation and 2x2 max pooling as one op ----
  // The pair conv2d_forward(act) then max_pool2d_forward(kernel 2, stride 2, no padding), which
  // need not keep the convolution's output nor its unfolded input: a backend may pool each
  // sample's output while it is in cache, unfold the input again in backward, and rebuild dz from
  // the pooled gradient. The results are those of the pair (the same maxima and argmax; the
  // gradients up to the order of their sums). The base class runs the pair on its own kernels,
  // keeping col, y and dz in the workspace.
  //
  // Floats of workspace for input x[B,C,H,W] and weights [O,C,KH,KW]; the forward and backward
  // of one batch take the same workspace (the forward may leave there what the backward reads).
  virtual int64_t conv2d_pool_workspace(const Window2d& win, const Shape& x,
                                        int64_t out_channels) const;
  // y[B,O,PH,PW] = maxpool2x2(act(conv(x[B,C,H,W], w[O,C,KH,KW]) + bias[O])), PH = OH / 2,
  // PW = OW / 2 (OH, OW: the convolution's output extent); argmax[B*O*PH*PW] receives the flat
  // index in the (OH*OW) plane of each maximum (the first in window order).
  // REQUIRES: OH, OW >= 2; fusable act; work: conv2d_pool_workspace floats.
  virtual void conv2d_pool_forward(const Window2d& win, const Tensor& x, const Tensor& w,
                                   const Tensor* bias, Activation act, Tensor& y,
                                   std::span<int32_t> argmax, std::span<float> work);
  // From dy[B,O,PH,PW] and the forward's x, y, argmax and work: dx[B,C,H,W] (skipped when
  // nullptr), dw[O,C,KH,KW], db[O] (skipped when nullptr).
  virtual void conv2d_pool_backward(const Window2d& win, const Tensor& x, const Tensor& w,
                                    const Tensor& y, std::span<const int32_t> argmax,
                                    Activation act, const Tensor& dy, Tensor* dx, Tensor& dw,
                                    Tensor* db, std::span<float> work);

  // ---- Pooling ----
  // Index arrays (argmax) live in this backend's memory too: allocate() a float tensor of the
  // same count and view its storage as int32 (both 4 bytes; only kernels read it).
  // y[B,C,OH,OW]; argmax[B*C*OH*OW] receives the flat index in the (H*W) plane of each maximum.
  virtual void max_pool2d_forward(const Window2d& win, const Tensor& x, Tensor& y,
                                  std::span<int32_t> argmax) = 0;
  // dx[B,C,H,W] from dy[B,C,OH,OW] and the argmax of the forward pass.
  virtual void max_pool2d_backward(const Window2d& win, std::span<const int32_t> argmax,
                                   const Tensor& dy, Tensor& dx) = 0;
  // Average over the window, padding counted as zeros (PyTorch's count_include_pad=True).
  virtual void avg_pool2d_forward(const Window2d& win, const Tensor& x, Tensor& y) = 0;
  virtual void avg_pool2d_backward(const Window2d& win, const Tensor& dy, Tensor& dx) = 0;
  // y[B,C] = mean over H, W of x[B,C,H,W]; backward spreads dy[B,C] into dx[B,C,H,W].
  virtual void global_avg_pool_forward(const Tensor& x, Tensor& y) = 0;
  virtual void global_avg_pool_backward(const Tensor& dy, Tensor& dx) = 0;

  // ---- Element-wise ----
  // y = act(x), any shape (x and y of one shape; y may alias x).
  virtual void activation_forward(Activation act, const Tensor& x, Tensor& y) = 0;
  // dx = dy * act'(x) (y = act(x) given too, for the activations whose derivative uses it).
  virtual void activation_backward(Activation act, const Tensor& x, const Tensor& y,
                                   const Tensor& dy, Tensor& dx) = 0;
  // Inverted dropout: mask = 0 with probability p else 1/(1-p), drawn from a counter-based hash
  // of (seed, element index) so the mask is independent of the thread count; y = x * mask.
  virtual void dropout_forward(float p, uint64_t seed, const Tensor& x, Tensor& mask,
                               Tensor& y) = 0;
  // y = a * b (element-wise).
  virtual void mul(const Tensor& a, const Tensor& b, Tensor& y) = 0;
  // y = a + b (element-wise); y may alias a or b.
  virtual void add(const Tensor& a, const Tensor& b, Tensor& y) = 0;
  // y = x, element by element (same numel; the shapes may differ, as for a flatten).
  virtual void copy(const Tensor& x, Tensor& y) = 0;

  // ---- Normalization ----
  // Batch norm over x[B,C,S] (S = 1 for [B,C] input): per channel c, mean[C] and rstd[C] of the
  // batch are saved; running stats are updated as PyTorch does (unbiased variance, momentum).
  virtual void batch_norm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                        float eps, float momentum, Tensor& running_mean,
                                        Tensor& running_var, Tensor& mean, Tensor& rstd,
                                        Tensor& y) = 0;
  virtual void batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       float eps, const Tensor& running_mean,
                                       const Tensor& running_var, Tensor& y) = 0;
  // dx[B,C,S] (skipped when nullptr), dgamma[C], dbeta[C], from the saved mean[C], rstd[C].
  virtual void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& dy, Tensor* dx, Tensor& dgamma,
                                   Tensor& dbeta) = 0;
  // Batch norm and the ReLU after it, y = max(batch_norm(x), 0), for LayerChain's fusion of the
  // pair; the arguments as above. By default the two ops in turn; a backend may run them as one.
  virtual void batch_norm_relu_forward_train(const Tensor& x, const Tensor& gamma,
                                             const Tensor& beta, float eps, float momentum,
                                             Tensor& running_mean, Tensor& running_var,
                                             Tensor& mean, Tensor& rstd, Tensor& y);
  virtual void batch_norm_relu_forward_eval(const Tensor& x, const Tensor& gamma,
                                            const Tensor& beta, float eps,
                                            const Tensor& running_mean, const Tensor& running_var,
                                            Tensor& y);
  // Floats of workspace batch_norm_relu_backward takes for input x (by default x's size: the
  // gradient masked by the ReLU).
  virtual int64_t batch_norm_relu_workspace(const Shape& x) const;
  // The pair's backward from its output y[B,C,S]: batch_norm_backward's gradients for dy set to 0
  // where y <= 0. REQUIRES: work holds batch_norm_relu_workspace(x.shape()) floats.
  virtual void batch_norm_relu_backward(const Tensor& x, const Tensor& y, const Tensor& gamma,
                                        const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                                        Tensor* dx, Tensor& dgamma, Tensor& dbeta,
                                        std::span<float> work);
  // Batch norm, the ReLU after it and a 2x2, stride 2, unpadded max pooling after that, for
  // LayerChain's fusion of the three in training: y[B,C,H/2,W/2] and argmax[B*C*(H/2)*(W/2)] (the
  // flat index in the H*W plane of each maximum, the first in window order) are those of
  // max_pool2d_forward over batch_norm_relu_forward_train's output, which need not be kept. The
  // backward takes the forward's y and argmax and gives batch_norm_relu_backward's gradients for
  // the pooling's gradient: a backend may rebuild the ReLU's gradient from them. By default the
  // ops in turn, the pair's output and its gradient kept in the workspace.
  // Floats of workspace for input x[B,C,H,W]; the forward and backward of one batch take the
  // same workspace (the forward may leave there what the backward reads). REQUIRES: H, W >= 2.
  virtual int64_t batch_norm_relu_pool_workspace(const Shape& x) const;
  virtual void batch_norm_relu_pool_forward_train(const Tensor& x, const Tensor& gamma,
                                                  const Tensor& beta, float eps, float momentum,
                                                  Tensor& running_mean, Tensor& running_var,
                                                  Tensor& mean, Tensor& rstd, Tensor& y,
                                                  std::span<int32_t> argmax, std::span<float> work);
  virtual void batch_norm_relu_pool_backward(const Tensor& x, const Tensor& y,
                                             std::span<const int32_t> argmax, const Tensor& gamma,
                                             const Tensor& mean, const Tensor& rstd,
                                             const Tensor& dy, Tensor* dx, Tensor& dgamma,
                                             Tensor& dbeta, std::span<float> work);
  // Layer norm over the last dim of x[N,D]; mean[N] and rstd[N] saved.
  virtual void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                  float eps, Tensor& mean, Tensor& rstd, Tensor& y) = 0;
  virtual void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& dy, Tensor* dx, Tensor& dgamma,
                                   Tensor& dbeta) = 0;

  // ---- Losses (mean over the batch) ----
  // The loss returns to the host (a GPU backend waits for it); labels are host memory.
  // logits[B,K], labels[B] in [0, K): mean cross-entropy of softmax(logits) against the one-hot
  // target smoothed as (1 - s) * onehot + s / K; dlogits[B,K] (skipped when nullptr).
  virtual float softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels,
                                      float label_smoothing, Tensor* dlogits) = 0;
  // Mean over all elements of (pred - target)^2; dpred (skipped when nullptr).
  virtual float mean_squared_error(const Tensor& pred, const Tensor& target, Tensor* dpred) = 0;

  // ---- Flat parameter arrays (optimizers), all in this backend's memory ----
  virtual void sgd_step(const SgdStepArgs& args, std::span<float> params,
                        std::span<const float> grads, std::span<float> velocity) = 0;
  virtual void adam_step(const AdamStepArgs& args, std::span<float> params,
                         std::span<const float> grads, std::span<float> m, std::span<float> v) = 0;
  // Sum of squares in double precision, reduced in a fixed order.
  virtual double sum_squares(std::span<const float> x) = 0;
  virtual void scale(std::span<float> x, float factor) = 0;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_BACKEND_H_
