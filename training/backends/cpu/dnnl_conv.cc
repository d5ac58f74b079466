// oneDNN's convolution primitives behind dnnl_conv.h: one cache of primitives and one set of
// scratch buffers per calling thread.
#include "training/backends/cpu/dnnl_conv.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <unordered_map>

#include "training/backends/cpu/dnnl_matmul.h"

#ifdef TUNER_HAVE_DNNL
#include <immintrin.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace tuner::training::cpu {

bool dnnl_conv_suits(int64_t c_in, int64_t kh, int64_t kw) {
  static const bool found = !dnnl_kernels().library.empty();
  return found && c_in >= kMinDnnlConvChannels && kh * kw > 1;
}

#ifdef TUNER_HAVE_DNNL
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Type = memory::data_type;

struct ShapeHash {
  size_t operator()(const DnnlConvShape& s) const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    const auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull + (h >> 29); };
    for (int64_t v : {s.n, s.c, s.h, s.w, s.o, s.kh, s.kw, s.stride, s.padding}) {
      mix(static_cast<uint64_t>(v));
    }
    mix(static_cast<uint64_t>(s.bf16));
    return static_cast<size_t>(h);
  }
};

#if defined(__AVX512F__) && defined(__AVX512BF16__)
#define TUNER_TO_NHWC_BF16 1

// r[i] = column i of the 16x16 matrix whose rows were r[0..15].
inline void transpose_16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}

// y[N,HW,C] = x[N,C,HW] rounded to bf16 (nearest, ties to even, as round_to_bf16 and oneDNN's
// reorder): 16 channels x 16 pixels at a time through a register transpose, the edges one value
// at a time.
void to_nhwc_bf16(const float* x, int64_t n, int64_t c, int64_t hw, uint16_t* y) {
  const int64_t c16 = c / 16 * 16, hw16 = hw / 16 * 16;
  for (int64_t b = 0; b < n; ++b) {
    const float* xb = x + b * c * hw;
    uint16_t* yb = y + b * hw * c;
    for (int64_t c0 = 0; c0 < c16; c0 += 16) {
      for (int64_t p = 0; p < hw16; p += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(xb + (c0 + i) * hw + p);
        transpose_16x16(r);
        for (int j = 0; j < 16; ++j) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(yb + (p + j) * c + c0),
                              reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(r[j])));
        }
      }
    }
    // The pixels past the last 16 (all channels), then the channels past the last 16.
    for (int64_t p = hw16; p < hw; ++p) {
      for (int64_t ch = 0; ch < c; ++ch) round_to_bf16(xb + ch * hw + p, 1, 1, 0, yb + p * c + ch);
    }
    for (int64_t ch = c16; ch < c; ++ch) {
      for (int64_t p = 0; p < hw16; ++p) round_to_bf16(xb + ch * hw + p, 1, 1, 0, yb + p * c + ch);
    }
  }
}
#endif

// A buffer of this thread's scratch that keeps its largest size (64-byte aligned, as oneDNN's
// kernels like their operands).
class Scratch {
 public:
  void* get(size_t bytes) {
    if (bytes > size_) {
      data_.reset(static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
      if (!data_) {
        std::fprintf(stderr, "tuner: out of memory for %zu bytes of convolution scratch\n", bytes);
        std::abort();
      }
      size_ = bytes;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t size_ = 0;
};

// The roles of a thread's scratch buffers: the blocked forms of the operands (the forward's dst
// and the backward's dz share one, as do the two passes' src) and oneDNN's own scratchpad.
enum Role { kSrc, kWeights, kOut, kBwdWeights, kDiffSrc, kDiffWeights, kBwdDiffDst, kPad, kRoles };

// One operand of a primitive: the engine's own layout (user) and the primitive's (own); when they
// differ, a reorder between them through a scratch buffer of this thread.
struct Operand {
  memory user, own;
  bool same = true;
  // The reorder is fp32 NCHW to bf16 NHWC over dims[4] (x and dz of the bf16 convolutions on
  // AMX), which to_nhwc_bf16 does in half of oneDNN's time. (oneDNN's reorders back, fp32 NHWC
  // or nChw16c to NCHW, and fp32 NCHW to nChw16c, beat the same register transposes.)
  bool nhwc_bf16 = false;
  memory::dims dims;
  Role role = kRoles;
  dnnl::reorder reorder;  // user -> own for an input, own -> user for an output (where !same)
  std::unordered_map<int, memory> reorder_args;
  // What the primitive reads or writes.
  const memory& arg() const { return same ? user : own; }
};

// A forward primitive (with a bias or without) and its operands. Primitives and reorders take
// their arguments as maps of memory handles, made once: a call sets the handles' data pointers.
struct Forward {
  dnnl::convolution_forward primitive;
  Operand src, weights, dst, bias;
  memory pad;  // scratchpad (user mode)
  std::unordered_map<int, memory> args;
};

// The primitives of one shape: the forward without a bias (whose layouts the backward ones were
// chosen to match), the forward with one (made at its first use), the backward data and weights.
struct Conv {
  Forward forward;
  std::optional<Forward> forward_bias;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
  Operand diff_dst, bwd_weights, diff_src;      // backward data
  Operand bwd_src, bwd_diff_dst, diff_weights;  // backward weights
  bool shared_diff_dst = true;                  // the backward weights read the backward data's dz
  memory pad_backward_data, pad_backward_weights;
  std::unordered_map<int, memory> backward_data_args, backward_weights_args;

  // True when the forward leaves x in the backward weights' layout in a buffer of `bytes` (the
  // caller's, kept until the backward) for the backward to read instead of reordering x again.
  bool keeps_src(size_t bytes) const {
    return !bwd_src.same && bwd_src.own.get_desc().get_size() <= bytes;
  }
};

class ThreadConvs {
 public:
  ThreadConvs() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    // The backend's own threads split the work: oneDNN must not start a team of its own here.
    omp_set_num_threads(1);
  }

  void forward(const DnnlConvShape& shape, const float* x, const float* w, const float* bias,
               float* y, void* keep, size_t keep_bytes) {
    Conv& c = get(shape);
    if (bias != nullptr && !c.forward_bias) c.forward_bias = make_forward(shape, true);
    Forward& f = bias != nullptr ? *c.forward_bias : c.forward;
    if (c.keeps_src(keep_bytes)) {
      in(c.bwd_src, x, keep);
      // The forward reads that copy where its layout is the same (always, where measured).
      if (!f.src.same && f.src.own.get_desc() == c.bwd_src.own.get_desc()) {
        f.src.own.set_data_handle(keep);
      } else {
        in(f.src, x);
      }
    } else {
      in(f.src, x);
    }
    in(f.weights, w);
    if (bias != nullptr) in(f.bias, bias);
    out(f.dst, y);
    pad(f.pad);
    f.primitive.execute(stream_, f.args);
    back(f.dst);
  }

  void backward(const DnnlConvShape& shape, const float* x, const float* w, const float* dz,
                float* dx, float* dw, const void* kept, size_t kept_bytes) {
    Conv& c = get(shape);
    in(c.diff_dst, dz);
    if (dx != nullptr) {
      in(c.bwd_weights, w);
      out(c.diff_src, dx);
      pad(c.pad_backward_data);
      c.backward_data.execute(stream_, c.backward_data_args);
      back(c.diff_src);
    }
    if (!c.shared_diff_dst) in(c.bwd_diff_dst, dz);
    if (c.keeps_src(kept_bytes)) {
      c.bwd_src.own.set_data_handle(const_cast<void*>(kept));
    } else {
      in(c.bwd_src, x);
    }
    out(c.diff_weights, dw);
    pad(c.pad_backward_weights);
    c.backward_weights.execute(stream_, c.backward_weights_args);
    back(c.diff_weights);
  }

 private:
  // Too many shapes seen by one thread (eval batches of every size): start over rather than grow
  // without bound. A training run has a few dozen.
  static constexpr size_t kMaxConvsPerThread = 256;

  Conv& get(const DnnlConvShape& shape) {
    auto it = convs_.find(shape);
    if (it == convs_.end()) {
      if (convs_.size() >= kMaxConvsPerThread) convs_.clear();
      it = convs_.emplace(shape, make(shape)).first;
    }
    return it->second;
  }

  // The input at `data`, reordered into the primitive's layout where it has its own: into `to`,
  // else into this thread's scratch.
  void in(Operand& op, const float* data, void* to = nullptr) {
    op.user.set_data_handle(const_cast<float*>(data));
    if (op.same) return;
    void* own = to != nullptr ? to : scratch_[op.role].get(op.own.get_desc().get_size());
    op.own.set_data_handle(own);
#ifdef TUNER_TO_NHWC_BF16
    if (op.nhwc_bf16) {
      to_nhwc_bf16(data, op.dims[0], op.dims[1], op.dims[2] * op.dims[3],
                   static_cast<uint16_t*>(own));
      return;
    }
#endif
    op.reorder.execute(stream_, op.reorder_args);
  }
  // The output at `data`: the primitive writes it there, or into scratch that back() reorders.
  void out(Operand& op, float* data) {
    op.user.set_data_handle(data);
    if (!op.same) op.own.set_data_handle(scratch_[op.role].get(op.own.get_desc().get_size()));
  }
  void back(Operand& op) {
    if (!op.same) op.reorder.execute(stream_, op.reorder_args);
  }
  void pad(memory& m) {
    const size_t bytes = m.get_desc().get_size();
    if (bytes > 0) m.set_data_handle(scratch_[kPad].get(bytes));
  }

  Operand operand(const memory::desc& user, const memory::desc& own, bool input, Role role) {
    Operand op;
    op.user = memory(user, engine_, DNNL_MEMORY_NONE);
    op.same = user == own;
    op.role = role;
    if (op.same) return op;
    op.own = memory(own, engine_, DNNL_MEMORY_NONE);
    op.dims = user.dims();
#ifdef TUNER_TO_NHWC_BF16
    op.nhwc_bf16 = input && op.dims.size() == 4 &&
                   user == memory::desc(op.dims, Type::f32, Tag::nchw) &&
                   own == memory::desc(op.dims, Type::bf16, Tag::nhwc);
#endif
    const memory& from = input ? op.user : op.own;
    const memory& to = input ? op.own : op.user;
    op.reorder = dnnl::reorder(
        dnnl::reorder::primitive_desc(engine_, from.get_desc(), engine_, to.get_desc()));
    op.reorder_args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return op;
  }

  // The descriptions every primitive of a shape is made from.
  struct Descs {
    explicit Descs(const DnnlConvShape& s)
        : src_dims{s.n, s.c, s.h, s.w},
          wei_dims{s.o, s.c, s.kh, s.kw},
          dst_dims{s.n, s.o, s.oh(), s.ow()},
          strides{s.stride, s.stride},
          padding{s.padding, s.padding},
          // The primitives choose their layouts; inputs in bf16 with bf16 products, outputs in
          // fp32.
          src_any(src_dims, s.bf16 ? Type::bf16 : Type::f32, Tag::any),
          wei_any(wei_dims, s.bf16 ? Type::bf16 : Type::f32, Tag::any),
          dst_any(dst_dims, Type::f32, Tag::any),
          diff_dst_any(dst_dims, s.bf16 ? Type::bf16 : Type::f32, Tag::any),
          diff_src_any(src_dims, Type::f32, Tag::any),
          diff_wei_any(wei_dims, Type::f32, Tag::any),
          bias({s.o}, Type::f32, Tag::x),
          // The engine's layouts, all fp32.
          user_src(src_dims, Type::f32, Tag::nchw),
          user_wei(wei_dims, Type::f32, Tag::oihw),
          user_dst(dst_dims, Type::f32, Tag::nchw) {
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    }
    memory::dims src_dims, wei_dims, dst_dims, strides, padding;
    memory::desc src_any, wei_any, dst_any, diff_dst_any, diff_src_any, diff_wei_any, bias;
    memory::desc user_src, user_wei, user_dst;
    dnnl::primitive_attr attr;
  };

  dnnl::convolution_forward::primitive_desc forward_desc(const Descs& d, bool bias) {
    const auto training = dnnl::prop_kind::forward_training;
    const auto alg = dnnl::algorithm::convolution_direct;
    return {bias ? dnnl::convolution_forward::desc(training, alg, d.src_any, d.wei_any, d.bias,
                                                   d.dst_any, d.strides, d.padding, d.padding)
                 : dnnl::convolution_forward::desc(training, alg, d.src_any, d.wei_any, d.dst_any,
                                                   d.strides, d.padding, d.padding),
            d.attr, engine_};
  }

  Forward make_forward(const DnnlConvShape& shape, bool bias) {
    const Descs d(shape);
    const auto pd = forward_desc(d, bias);
    Forward f;
    f.primitive = dnnl::convolution_forward(pd);
    f.src = operand(d.user_src, pd.src_desc(), true, kSrc);
    f.weights = operand(d.user_wei, pd.weights_desc(), true, kWeights);
    f.dst = operand(d.user_dst, pd.dst_desc(), false, kOut);
    f.bias = operand(d.bias, d.bias, true, kRoles);
    f.pad = memory(pd.scratchpad_desc(), engine_, DNNL_MEMORY_NONE);
    f.args = {{DNNL_ARG_SRC, f.src.arg()},
              {DNNL_ARG_WEIGHTS, f.weights.arg()},
              {DNNL_ARG_DST, f.dst.arg()},
              {DNNL_ARG_SCRATCHPAD, f.pad}};
    if (bias) f.args.insert({DNNL_ARG_BIAS, f.bias.arg()});
    return f;
  }

  Conv make(const DnnlConvShape& shape) {
    const Descs d(shape);
    const auto alg = dnnl::algorithm::convolution_direct;
    const auto fpd = forward_desc(d, false);
    const dnnl::convolution_backward_data::primitive_desc bdpd(
        dnnl::convolution_backward_data::desc(alg, d.diff_src_any, d.wei_any, d.diff_dst_any,
                                              d.strides, d.padding, d.padding),
        d.attr, engine_, fpd);
    const dnnl::convolution_backward_weights::primitive_desc bwpd(
        dnnl::convolution_backward_weights::desc(alg, d.src_any, d.diff_wei_any, d.diff_dst_any,
                                                 d.strides, d.padding, d.padding),
        d.attr, engine_, fpd);
    Conv c;
    c.forward = make_forward(shape, false);
    c.backward_data = dnnl::convolution_backward_data(bdpd);
    c.backward_weights = dnnl::convolution_backward_weights(bwpd);
    c.diff_dst = operand(d.user_dst, bdpd.diff_dst_desc(), true, kOut);
    c.bwd_weights = operand(d.user_wei, bdpd.weights_desc(), true, kBwdWeights);
    c.diff_src = operand(d.user_src, bdpd.diff_src_desc(), false, kDiffSrc);
    c.bwd_src = operand(d.user_src, bwpd.src_desc(), true, kSrc);
    c.shared_diff_dst = bwpd.diff_dst_desc() == bdpd.diff_dst_desc();
    c.bwd_diff_dst = c.shared_diff_dst
                         ? c.diff_dst
                         : operand(d.user_dst, bwpd.diff_dst_desc(), true, kBwdDiffDst);
    c.diff_weights = operand(d.user_wei, bwpd.diff_weights_desc(), false, kDiffWeights);
    c.pad_backward_data = memory(bdpd.scratchpad_desc(), engine_, DNNL_MEMORY_NONE);
    c.pad_backward_weights = memory(bwpd.scratchpad_desc(), engine_, DNNL_MEMORY_NONE);
    c.backward_data_args = {{DNNL_ARG_DIFF_DST, c.diff_dst.arg()},
                            {DNNL_ARG_WEIGHTS, c.bwd_weights.arg()},
                            {DNNL_ARG_DIFF_SRC, c.diff_src.arg()},
                            {DNNL_ARG_SCRATCHPAD, c.pad_backward_data}};
    c.backward_weights_args = {{DNNL_ARG_SRC, c.bwd_src.arg()},
                               {DNNL_ARG_DIFF_DST, c.bwd_diff_dst.arg()},
                               {DNNL_ARG_DIFF_WEIGHTS, c.diff_weights.arg()},
                               {DNNL_ARG_SCRATCHPAD, c.pad_backward_weights}};
    return c;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::unordered_map<DnnlConvShape, Conv, ShapeHash> convs_;
  Scratch scratch_[kRoles];
};

ThreadConvs& thread_convs() {
  thread_local ThreadConvs convs;
  return convs;
}

// The backend's threads cannot carry an exception out; a convolution oneDNN refuses is a defect
// (the backend checked bf16 support when it was made).
[[noreturn]] void refused(const char* pass, const DnnlConvShape& s, const dnnl::error& e) {
  std::fprintf(stderr,
               "tuner: oneDNN refused a %s %s convolution x[%lld,%lld,%lld,%lld] w[%lld,%lld,%lld,"
               "%lld] stride %lld padding %lld: %s (status %d)\n",
               s.bf16 ? "bf16" : "fp32", pass, static_cast<long long>(s.n),
               static_cast<long long>(s.c), static_cast<long long>(s.h),
               static_cast<long long>(s.w), static_cast<long long>(s.o),
               static_cast<long long>(s.c), static_cast<long long>(s.kh),
               static_cast<long long>(s.kw), static_cast<long long>(s.stride),
               static_cast<long long>(s.padding), e.what(), static_cast<int>(e.status));
  std::abort();
}

}  // namespace

void dnnl_conv_forward(const DnnlConvShape& s, const float* x, const float* w, const float* bias,
                       float* y, void* keep, size_t keep_bytes) {
  try {
    thread_convs().forward(s, x, w, bias, y, keep, keep_bytes);
  } catch (const dnnl::error& e) {
    refused("forward", s, e);
  }
}

void dnnl_conv_backward(const DnnlConvShape& s, const float* x, const float* w, const float* dz,
                        float* dx, float* dw, const void* kept, size_t kept_bytes) {
  try {
    thread_convs().backward(s, x, w, dz, dx, dw, kept, kept_bytes);
  } catch (const dnnl::error& e) {
    refused("backward", s, e);
  }
}

#else

// Never called: without oneDNN, dnnl_conv_suits() is false and the backend unfolds (im2col).
void dnnl_conv_forward(const DnnlConvShape&, const float*, const float*, const float*, float*,
                       void*, size_t) {
  std::fprintf(stderr, "tuner: dnnl_conv_forward called in a build without oneDNN\n");
  std::abort();
}

void dnnl_conv_backward(const DnnlConvShape&, const float*, const float*, const float*, float*,
                        float*, const void*, size_t) {
  std::fprintf(stderr, "tuner: dnnl_conv_backward called in a build without oneDNN\n");
  std::abort();
}

#endif

}  // namespace tuner::training::cpu
