#!/usr/bin/env bash
# The GPU check, in one run that fits in 8 minutes on one GPU machine:
#   1. the GPU tests (the CUDA backend's op suite against the CPU backend, NCCL, the inventory),
#      in the whole training_tests binary; then the sweeps on the GPU (tests/sweep/
#      gpu_memory_test.sh: GPU memory per trial measured and bounding placement);
#   2. training throughput and accuracy of the MLP and the CNN, engine (--backend cuda) against
#      PyTorch eager on the same GPU in the same run; the CNN again with the engine's convolutions
#      through cuDNN (--backend cuda-cudnn, CudaBackendOptions::convolution = kCudnn; its op tests
#      are the op suite's cuda_cudnn cases, in step 1), a few seconds more; then both
#      again in bf16 mixed precision (engine --backend cuda-bf16 against PyTorch under
#      torch.autocast(dtype=torch.bfloat16));
#   3. the GEMM peak each side reaches, the bf16 GEMM rate of the engine against cuBLAS's own
#      (gemm_bf16), and the NCCL all-reduce bandwidth.
#
#   bench/gpu/check.sh [--bin DIR] [--data DIR] [--quick] [--tests-only]
# --bin: binaries made by bench/gpu/pack.sh (a machine without this project's Debian packages);
#        otherwise it configures and builds in $BUILD (default build-gpu) here.
# --tests-only: step 1 alone.
# Results: one JSON line per measurement on stdout, also saved to $RESULTS (default
# <build or bin>/gpu-check-<time>.jsonl). Exit status: that of the tests, else 0.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin=""
data="/usr/share/datasets/fashion-mnist/"
quick=()
tests_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$(cd "$2" && pwd)"; shift ;;
    --data) data="$2"; shift ;;
    --quick) quick=(--quick) ;;
    --tests-only) tests_only=1 ;;
    *) echo "usage: $0 [--bin DIR] [--data DIR] [--quick] [--tests-only]" >&2; exit 2 ;;
  esac
  shift
done
case "$data" in */) ;; *) data="$data/" ;; esac
export TUNER_FASHION_MNIST_DIR="$data"  # for the tests that read Fashion-MNIST

if [ -z "$bin" ]; then
  build="${BUILD:-$root/build-gpu}"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUNER_CUDA=ON >/dev/null || exit 1
  cmake --build "$build" -j "$(nproc)" --target training_tests engine_vs_pytorch nccl_allreduce gemm_bf16 tuner || exit 1
  tests="$build/training/training_tests"
  tuner="$build/cli/tuner"
  engine="$build/bench/engine/engine_vs_pytorch"
  nccl="$build/bench/gpu/nccl_allreduce"
  gemm="$build/bench/gpu/gemm_bf16"
  peer="$root/bench/engine/engine_vs_pytorch.py"
  results_dir="$build"
else
  # Packed binaries load their libraries from ../lib, CUDA's from the machine.
  export LD_LIBRARY_PATH="$bin/../lib:/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  tests="$bin/training_tests"
  tuner="$bin/tuner"
  engine="$bin/engine_vs_pytorch"
  nccl="$bin/nccl_allreduce"
  gemm="$bin/gemm_bf16"
  peer="$bin/engine_vs_pytorch.py"
  results_dir="$bin/.."
fi
results="${RESULTS:-$results_dir/gpu-check-$(date +%Y%m%d-%H%M%S).jsonl}"
python="${PYTHON:-python3}"
# The engine loads libcudnn.so.9 at run time, for its cuDNN convolutions only; where the machine
# has no cuDNN of its own, PyTorch's copy (the nvidia-cudnn wheel) serves.
if ! ldconfig -p 2>/dev/null | grep -q 'libcudnn\.so\.9' &&
   [ ! -e /usr/local/cuda/lib64/libcudnn.so.9 ]; then
  cudnn_lib="$("$python" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0] + "/lib")' \
               2>/dev/null)"
  if [ -n "$cudnn_lib" ] && [ -e "$cudnn_lib/libcudnn.so.9" ]; then
    export LD_LIBRARY_PATH="$cudnn_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi
step() { echo "== $* ($(date +%T))" >&2; }

step "GPU"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2

step "tests"
"$tests" --gtest_brief=1 2>&1 | tail -40
tests_rc=${PIPESTATUS[0]}
echo "{\"bench\": \"gpu_tests\", \"exit_code\": $tests_rc}" | tee -a "$results"

step "sweeps on the GPU"
sweep_work="$(mktemp -d)"
"$root/tests/sweep/gpu_memory_test.sh" "$tuner" "$sweep_work" 2>&1 | tail -20
sweeps_rc=${PIPESTATUS[0]}
rm -rf "$sweep_work"
echo "{\"bench\": \"gpu_sweeps\", \"exit_code\": $sweeps_rc}" | tee -a "$results"
[ "$tests_rc" -ne 0 ] || tests_rc=$sweeps_rc
[ "$tests_only" -eq 0 ] || exit "$tests_rc"

step "engine on the GPU"
"$engine" --backend cuda --data "$data" "${quick[@]}" | tee -a "$results"
step "engine on the GPU, cuDNN convolutions (the CNN)"
"$engine" --backend cuda-cudnn --models cnn --data "$data" "${quick[@]}" | tee -a "$results"
step "PyTorch on the GPU"
"$python" "$peer" --device cuda --data "$data" --label pytorch-cuda "${quick[@]}" | tee -a "$results"
"$python" - <<'PY' | tee -a "$results"
# cuBLAS's own bf16 GEMM rate through PyTorch, the ceiling for the engine's bf16 path.
import json, time, torch
n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    a @ b
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(20):
    a @ b
torch.cuda.synchronize()
print(json.dumps({"impl": "pytorch-cuda", "torch": torch.__version__, "bf16_gemm_tflops":
                  round(20 * 2 * n ** 3 / (time.perf_counter() - t) / 1e12, 1), "n": n}))
PY

step "engine on the GPU, bf16 mixed precision"
"$engine" --backend cuda-bf16 --data "$data" "${quick[@]}" | tee -a "$results"
step "PyTorch on the GPU, autocast bf16"
"$python" "$peer" --device cuda --autocast-bf16 --data "$data" --label pytorch-cuda-bf16 \
  "${quick[@]}" | tee -a "$results"

step "bf16 GEMM: engine against cuBLAS"
if [ ${#quick[@]} -gt 0 ]; then
  "$gemm" --sizes 4096 --reps 10 | tee -a "$results"
else
  "$gemm" --sizes 4096,8192 --reps 20 | tee -a "$results"
fi

step "NCCL all-reduce"
"$nccl" ${quick:+--max-mb 64} | tee -a "$results"

step "done: $results"
exit "$tests_rc"
