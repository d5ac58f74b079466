// oneDNN's convolution primitives behind dnnl_conv.h: one cache of primitives and one set of
// scratch buffers per calling thread.
#include "training/backends/cpu/dnnl_conv.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <unordered_map>

#include "training/backends/cpu/dnnl_matmul.h"

#ifdef TUNER_HAVE_DNNL
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

struct ConvKey {
  DnnlConvShape shape;
  bool bias;
  bool operator==(const ConvKey&) const = default;
};

struct ConvKeyHash {
  size_t operator()(const ConvKey& key) const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    const auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull + (h >> 29); };
    const DnnlConvShape& s = key.shape;
    for (int64_t v : {s.n, s.c, s.h, s.w, s.o, s.kh, s.kw, s.stride, s.padding}) {
      mix(static_cast<uint64_t>(v));
    }
    mix(static_cast<uint64_t>(s.bf16) | static_cast<uint64_t>(key.bias) << 1);
    return static_cast<size_t>(h);
  }
};

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
  Role role = kRoles;
  dnnl::reorder reorder;  // user -> own for an input, own -> user for an output (where !same)
  std::unordered_map<int, memory> reorder_args;
  // What the primitive reads or writes.
  const memory& arg() const { return same ? user : own; }
};

// The three primitives of one shape with their operands. Primitives and reorders take their
// arguments as maps of memory handles, made once here: a call sets the handles' data pointers.
struct Conv {
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
  Operand src, weights, dst, bias;              // forward
  Operand diff_dst, bwd_weights, diff_src;      // backward data
  Operand bwd_src, bwd_diff_dst, diff_weights;  // backward weights
  bool shared_diff_dst = true;                  // the backward weights read the backward data's dz
  memory pad_forward, pad_backward_data, pad_backward_weights;  // scratchpads (user mode)
  std::unordered_map<int, memory> forward_args, backward_data_args, backward_weights_args;
};

class ThreadConvs {
 public:
  ThreadConvs() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    // The backend's own threads split the work: oneDNN must not start a team of its own here.
    omp_set_num_threads(1);
  }

  void forward(const ConvKey& key, const float* x, const float* w, const float* bias, float* y) {
    Conv& c = get(key);
    in(c.src, x);
    in(c.weights, w);
    if (key.bias) in(c.bias, bias);
    out(c.dst, y);
    pad(c.pad_forward);
    c.forward.execute(stream_, c.forward_args);
    back(c.dst);
  }

  void backward(const ConvKey& key, const float* x, const float* w, const float* dz, float* dx,
                float* dw) {
    Conv& c = get(key);
    in(c.diff_dst, dz);
    if (dx != nullptr) {
      in(c.bwd_weights, w);
      out(c.diff_src, dx);
      pad(c.pad_backward_data);
      c.backward_data.execute(stream_, c.backward_data_args);
      back(c.diff_src);
    }
    if (!c.shared_diff_dst) in(c.bwd_diff_dst, dz);
    in(c.bwd_src, x);
    out(c.diff_weights, dw);
    pad(c.pad_backward_weights);
    c.backward_weights.execute(stream_, c.backward_weights_args);
    back(c.diff_weights);
  }

 private:
  // Too many shapes seen by one thread (eval batches of every size): start over rather than grow
  // without bound. A training run has a few dozen.
  static constexpr size_t kMaxConvsPerThread = 256;

  Conv& get(const ConvKey& key) {
    auto it = convs_.find(key);
    if (it == convs_.end()) {
      if (convs_.size() >= kMaxConvsPerThread) convs_.clear();
      it = convs_.emplace(key, make(key)).first;
    }
    return it->second;
  }

  // The input at `data`, reordered into the primitive's layout where it has its own.
  void in(Operand& op, const float* data) {
    op.user.set_data_handle(const_cast<float*>(data));
    if (op.same) return;
    op.own.set_data_handle(scratch_[op.role].get(op.own.get_desc().get_size()));
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
    const memory& from = input ? op.user : op.own;
    const memory& to = input ? op.own : op.user;
    op.reorder = dnnl::reorder(
        dnnl::reorder::primitive_desc(engine_, from.get_desc(), engine_, to.get_desc()));
    op.reorder_args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return op;
  }

  Conv make(const ConvKey& key) {
    const DnnlConvShape& s = key.shape;
    const memory::dims src_dims{s.n, s.c, s.h, s.w}, wei_dims{s.o, s.c, s.kh, s.kw},
        dst_dims{s.n, s.o, s.oh(), s.ow()}, strides{s.stride, s.stride},
        padding{s.padding, s.padding};
    const Type in_type = s.bf16 ? Type::bf16 : Type::f32;
    // The primitives choose their layouts; inputs in bf16 with bf16 products, outputs in fp32.
    const memory::desc src_any(src_dims, in_type, Tag::any), wei_any(wei_dims, in_type, Tag::any),
        dst_any(dst_dims, Type::f32, Tag::any), diff_dst_any(dst_dims, in_type, Tag::any),
        diff_src_any(src_dims, Type::f32, Tag::any), diff_wei_any(wei_dims, Type::f32, Tag::any),
        bias_desc({s.o}, Type::f32, Tag::x);
    // The engine's layouts, all fp32.
    const memory::desc user_src(src_dims, Type::f32, Tag::nchw),
        user_wei(wei_dims, Type::f32, Tag::oihw), user_dst(dst_dims, Type::f32, Tag::nchw);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto alg = dnnl::algorithm::convolution_direct;
    const auto training = dnnl::prop_kind::forward_training;
    const auto forward_desc =
        key.bias ? dnnl::convolution_forward::desc(training, alg, src_any, wei_any, bias_desc,
                                                   dst_any, strides, padding, padding)
                 : dnnl::convolution_forward::desc(training, alg, src_any, wei_any, dst_any,
                                                   strides, padding, padding);
    const dnnl::convolution_forward::primitive_desc fpd(forward_desc, attr, engine_);
    const dnnl::convolution_backward_data::primitive_desc bdpd(
        dnnl::convolution_backward_data::desc(alg, diff_src_any, wei_any, diff_dst_any, strides,
                                              padding, padding),
        attr, engine_, fpd);
    const dnnl::convolution_backward_weights::primitive_desc bwpd(
        dnnl::convolution_backward_weights::desc(alg, src_any, diff_wei_any, diff_dst_any, strides,
                                                 padding, padding),
        attr, engine_, fpd);
    Conv c;
    c.forward = dnnl::convolution_forward(fpd);
    c.backward_data = dnnl::convolution_backward_data(bdpd);
    c.backward_weights = dnnl::convolution_backward_weights(bwpd);
    c.src = operand(user_src, fpd.src_desc(), true, kSrc);
    c.weights = operand(user_wei, fpd.weights_desc(), true, kWeights);
    c.dst = operand(user_dst, fpd.dst_desc(), false, kOut);
    c.bias = operand(bias_desc, bias_desc, true, kRoles);
    c.diff_dst = operand(user_dst, bdpd.diff_dst_desc(), true, kOut);
    c.bwd_weights = operand(user_wei, bdpd.weights_desc(), true, kBwdWeights);
    c.diff_src = operand(user_src, bdpd.diff_src_desc(), false, kDiffSrc);
    c.bwd_src = operand(user_src, bwpd.src_desc(), true, kSrc);
    c.shared_diff_dst = bwpd.diff_dst_desc() == bdpd.diff_dst_desc();
    c.bwd_diff_dst =
        c.shared_diff_dst ? c.diff_dst : operand(user_dst, bwpd.diff_dst_desc(), true, kBwdDiffDst);
    c.diff_weights = operand(user_wei, bwpd.diff_weights_desc(), false, kDiffWeights);
    c.pad_forward = memory(fpd.scratchpad_desc(), engine_, DNNL_MEMORY_NONE);
    c.pad_backward_data = memory(bdpd.scratchpad_desc(), engine_, DNNL_MEMORY_NONE);
    c.pad_backward_weights = memory(bwpd.scratchpad_desc(), engine_, DNNL_MEMORY_NONE);
    c.forward_args = {{DNNL_ARG_SRC, c.src.arg()},
                      {DNNL_ARG_WEIGHTS, c.weights.arg()},
                      {DNNL_ARG_DST, c.dst.arg()},
                      {DNNL_ARG_SCRATCHPAD, c.pad_forward}};
    if (key.bias) c.forward_args.insert({DNNL_ARG_BIAS, c.bias.arg()});
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
  std::unordered_map<ConvKey, Conv, ConvKeyHash> convs_;
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
                       float* y) {
  try {
    thread_convs().forward({s, bias != nullptr}, x, w, bias, y);
  } catch (const dnnl::error& e) {
    refused("forward", s, e);
  }
}

void dnnl_conv_backward(const DnnlConvShape& s, const float* x, const float* w, const float* dz,
                        float* dx, float* dw) {
  try {
    // The primitives of the forward (bias or not) are the same for the backward: either key's.
    thread_convs().backward({s, false}, x, w, dz, dx, dw);
  } catch (const dnnl::error& e) {
    refused("backward", s, e);
  }
}

#else

// Never called: without oneDNN, dnnl_conv_suits() is false and the backend unfolds (im2col).
void dnnl_conv_forward(const DnnlConvShape&, const float*, const float*, const float*, float*) {
  std::fprintf(stderr, "tuner: dnnl_conv_forward called in a build without oneDNN\n");
  std::abort();
}

void dnnl_conv_backward(const DnnlConvShape&, const float*, const float*, const float*, float*,
                        float*) {
  std::fprintf(stderr, "tuner: dnnl_conv_backward called in a build without oneDNN\n");
  std::abort();
}

#endif

}  // namespace tuner::training::cpu
