#!/usr/bin/env bash
# Packs what bench/gpu/check.sh needs into one folder, for a GPU machine that lacks this
# project's Debian packages: the GPU-capable binaries (stripped; `tuner` for the sweeps on the
# GPU), the shared libraries they load
# that are neither glibc's nor CUDA's own (those come from the GPU machine: its driver, CUDA
# runtime, cuBLAS, cuDNN and NCCL), the Fashion-MNIST files and the PyTorch peer script. cuDNN is
# not linked but loaded at run time by the cuDNN convolutions only (check.sh falls back on
# PyTorch's copy), so it is not packed either.
#
#   bench/gpu/pack.sh [DEST]        (default DEST: .gpu at the repository root)
# Environment: BUILD (default build/), which must have been configured with CUDA.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build}"
dest="${1:-$root/.gpu}"
targets=(training_tests engine_vs_pytorch nccl_allreduce gemm_bf16 tuner)

cmake --build "$build" -j 2 --target "${targets[@]}" >/dev/null
rm -rf "$dest/bin" "$dest/lib" "$dest/data"
mkdir -p "$dest/bin" "$dest/lib" "$dest/data"
for t in "${targets[@]}"; do
  exe="$(find "$build" -name "$t" -type f -perm -u+x | head -1)"
  [ -n "$exe" ] || { echo "pack: $t was not built in $build (configured without CUDA?)" >&2; exit 1; }
  cp "$exe" "$dest/bin/" && strip -s "$dest/bin/$t"
  ldd "$exe" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libstdc++.so*|libgcc_s.so*) ;;
      libcuda.so*|libcublas*|libcudnn*|libnccl*) ;;  # the GPU machine's own
      *) cp -L "$lib" "$dest/lib/" ;;
    esac
  done
done
cp /usr/share/datasets/fashion-mnist/*.gz "$dest/data/"
cp "$root/bench/engine/engine_vs_pytorch.py" "$dest/bin/"
du -sh "$dest"
