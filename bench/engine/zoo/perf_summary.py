#!/usr/bin/env python3
"""Where engine_zoo's time goes, by op, from a perf profile.

    perf record -F 1999 -o zoo.perf build/bench/engine/engine_zoo --models M --no-accuracy \\
        --repeats 1 --seconds 8 --synthetic
    bench/engine/zoo/perf_summary.py zoo.perf [--top 12]

Sums perf's samples per symbol (`perf report --no-children --sort symbol`) into the ops they
belong to (the CPU backend runs each op as a lambda inside ThreadPool::run, whose demangled name
carries the op's), leaves the set-up out (data loading, normalization, synthetic data), and
prints each op's share of the training steps' samples, then the largest symbols not matched.
"""
import argparse
import re
import subprocess
import sys

# (op, pattern on the symbol or library), first match wins; order matters.
CATEGORIES = [
    ("set-up (data, not in the steps)", r"read_idx|Normalizer|libz\.so|synthetic_dataset|"
                                        r"splitmix|inflate|read_zoo|nlohmann"),
    ("batch norm", r"batch_norm"),
    ("layer norm", r"layer_norm"),
    ("dropout", r"dropout"),
    ("optimizer step (adam/adamw/sgd)", r"adam_step|sgd_step"),
    ("softmax cross-entropy", r"softmax_cross_entropy"),
    ("conv + max-pool (fused op, non-GEMM part)", r"conv2d_pool|conv_pool"),
    # The CPU backend's own reorders into oneDNN's convolution layouts (NCHW fp32 -> NHWC bf16),
    # inlined into ThreadConvs::in; oneDNN's own reorders are JIT code (GEMM below).
    ("oneDNN conv reorders (engine's own)", r"ThreadConvs|to_nhwc_bf16"),
    ("im2col / col2im / conv bookkeeping", r"im2col|col2im|unfold|conv_forward_sample|"
                                           r"conv_backward_sample|conv2d_"),
    ("max / avg / global pooling", r"max_pool|avg_pool|global_avg_pool|pool_2x2"),
    ("residual add / add / copy", r"CpuBackend::add|CpuBackend::copy|Residual"),
    ("libm erf/exp/tanh (GELU, tanh)", r"__erff|__expf|__tanhf|erff@plt|expf@plt|tanhf@plt|"
                                       r"libm\.so"),
    ("activation kernels (fwd/bwd passes)", r"activation_forward|activation_backward"),
    ("rounding to bf16 (bf16 products' inputs)", r"round_to_bf16|to_bf16"),
    ("linear layers' own passes (bias, act', db)", r"linear_forward|linear_backward"),
    # oneDNN's kernels are JIT code: perf shows them as [unknown] symbols (the only JIT code here).
    ("GEMM (OpenBLAS, oneDNN, Eigen)", r"sgemm|gebp|gemm_pack|general_matrix|openblas|"
                                       r"Eigen::internal|CpuBackend::gemm|dnnl|\[unknown\]|"
                                       r"//anon|\[JIT\]"),
    ("memset (zeroing outputs, grads)", r"__memset"),
    ("memcpy (batch copy-in, copies)", r"__memmove|__memcpy"),
    ("allocation", r"malloc|_int_free|cfree|operator new|operator delete"),
    ("thread pool, scheduler, kernel", r"ThreadPool|\[k\]|futex|sched_yield|kallsyms"),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("perf_data")
    p.add_argument("--top", type=int, default=8, help="unmatched symbols to list")
    a = p.parse_args()
    out = subprocess.run(["perf", "report", "-i", a.perf_data, "--no-children", "--sort",
                          "dso,symbol", "--stdio", "--percent-limit", "0"],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+(.*)$", line)
        if m:
            rows.append((float(m.group(1)), m.group(2) + " " + m.group(3).strip()))
    totals, other = {}, []
    for pct, sym in rows:
        for name, pattern in CATEGORIES:
            if re.search(pattern, sym):
                totals[name] = totals.get(name, 0.0) + pct
                break
        else:
            other.append((pct, sym))
            totals["other"] = totals.get("other", 0.0) + pct
    setup = totals.pop("set-up (data, not in the steps)", 0.0)
    steps = sum(totals.values())
    print(f"{a.perf_data}: set-up {setup:.1f}% of the samples, left out; shares of the rest:")
    for name, pct in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {100 * pct / steps:5.1f}%  {name}")
    if other and a.top > 0:
        print("  largest unmatched symbols:")
        for pct, sym in sorted(other, reverse=True)[:a.top]:
            print(f"    {100 * pct / steps:5.1f}%  {sym[:150]}")


if __name__ == "__main__":
    sys.exit(main())
