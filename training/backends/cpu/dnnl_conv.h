// Single-threaded 2-D convolutions on oneDNN's convolution primitives (libdnnl-dev): the CPU
// backend's convolutions with at least kMinDnnlConvChannels input channels and a kernel larger
// than 1x1, where oneDNN's direct kernels (AVX-512, and AMX or AVX512-BF16 for bf16 inputs) beat
// im2col + GEMM; docs/training.md ("Convolutions on oneDNN") has the measurements.
//
// The backend splits a batch over its threads and calls these from each with its share of the
// samples, so oneDNN runs on the calling thread only (as dnnl_matmul.h). Tensors stay in the
// engine's NCHW (activations) and OIHW (weights) layouts; each primitive reads and writes the
// blocked layouts oneDNN chooses for the shape (format_tag::any), through reorders into this
// thread's scratch, which keeps its largest size. Each thread keeps its own primitives, one set
// (forward, backward data, backward weights) per shape, made at the shape's first call: the steps
// of a training run allocate nothing after the first.
//
// With bf16 inputs, the reorders round x, w and dz to bf16 (nearest, ties to even) and the
// primitives accumulate and write fp32 (y, dx, dw), as the backend's bf16 GEMMs do.
//
// Thread safety: every function may be called from any thread.
#ifndef TUNER_TRAINING_BACKENDS_CPU_DNNL_CONV_H_
#define TUNER_TRAINING_BACKENDS_CPU_DNNL_CONV_H_

#include <cstddef>
#include <cstdint>

namespace tuner::training::cpu {

// Input channels below which im2col + GEMM stays (an image's first convolution over 1 or 3
// channels, where oneDNN's kernels measured no faster and its bf16 ones slower).
constexpr int64_t kMinDnnlConvChannels = 8;

// One convolution call: x[N,C,H,W] * w[O,C,KH,KW] -> y[N,O,OH,OW], the same stride and padding on
// both axes (the engine's Window2d).
struct DnnlConvShape {
  int64_t n, c, h, w, o, kh, kw, stride, padding;
  bool bf16;  // inputs rounded to bf16, fp32 accumulation and outputs
  int64_t oh() const { return (h + 2 * padding - kh) / stride + 1; }
  int64_t ow() const { return (w + 2 * padding - kw) / stride + 1; }
  bool operator==(const DnnlConvShape&) const = default;
};

// True when the backend runs a convolution of this geometry on oneDNN: the build has it, the
// input has kMinDnnlConvChannels or more channels, and the kernel has more than one tap. Depends
// on the shape only (not on the batch), so results stay deterministic.
bool dnnl_conv_suits(int64_t c_in, int64_t kh, int64_t kw);

// y[N,O,OH,OW] = conv(x, w) + bias[O] (bias may be nullptr) on the calling thread. `keep` (may be
// nullptr when keep_bytes is 0) is the caller's buffer of keep_bytes that it hands, unchanged, to
// the backward of the same x: where x in the backward's layout fits, the forward leaves it there
// and the backward reads it instead of reordering x again.
// REQUIRES: dnnl_conv_suits(...); s.n >= 1; with s.bf16, dnnl_kernels().bf16.
void dnnl_conv_forward(const DnnlConvShape& s, const float* x, const float* w, const float* bias,
                       float* y, void* keep, size_t keep_bytes);

// From x[N,C,H,W], w[O,C,KH,KW] and dz[N,O,OH,OW] (the gradient at the convolution's output):
// dw[O,C,KH,KW] = the sum over the N samples (overwritten), dx[N,C,H,W] (skipped when nullptr).
// kept, kept_bytes: the forward's keep and keep_bytes.
// REQUIRES: as dnnl_conv_forward, which ran last on this x with this kept buffer.
void dnnl_conv_backward(const DnnlConvShape& s, const float* x, const float* w, const float* dz,
                        float* dx, float* dw, const void* kept, size_t kept_bytes);

}  // namespace tuner::training::cpu

#endif  // TUNER_TRAINING_BACKENDS_CPU_DNNL_CONV_H_
