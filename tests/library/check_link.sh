#!/bin/sh
# The tuning library links SQLite and nothing of the service: an ask/tell program and
# libtuner.so must hold no ZeroMQ, BLAS (OpenBLAS), oneDNN, ONNX, protobuf, Gloo, CUDA, OpenMP or
# OpenCL library, nor one of the service's own archives, in their link line or among the shared
# libraries they need (ELF NEEDED).
#   check_link.sh ASK_TELL LINK_INPUTS LIBTUNER_SO
# LINK_INPUTS: the linker's dependency file of ASK_TELL (ld --dependency-file: every file the
# link read), or "-" where the linker cannot write one (then NEEDED alone is checked).
set -eu
program=$1 inputs=$2 library=$3
forbidden='zmq|blas|dnnl|mkldnn|onnx|protobuf|gloo|cuda|cublas|cudnn|nccl|opencl|gomp|libtuner_(wire|training|executor|registry|tracking|coordinator|sweep|report|drift|serving|cli)\.a'
status=0

fail() {
  echo "FAIL: $*" >&2
  status=1
}

# The files the link of the ask/tell program read (the depfile's "target: dep dep \" lines).
if [ "$inputs" != "-" ]; then
  [ -s "$inputs" ] || { echo "FAIL: no link inputs in $inputs (was $program relinked?)" >&2; exit 1; }
  files=$(sed -e 's/\\$//' -e 's/^[^ ]*: //' "$inputs" | tr ' ' '\n' | sed '/^$/d')
  echo "$files" | grep -Eq 'libtuner_tuner\.a$' ||
    fail "$inputs does not list libtuner_tuner.a: not the ask/tell program's link"
  echo "$files" | grep -Eq 'sqlite3' || fail "$program's link line holds no SQLite"
  bad=$(echo "$files" | grep -Ei "$forbidden" || true)
  [ -z "$bad" ] || fail "$program's link line holds libraries of the service or the engine:
$bad"
fi

# The shared libraries that the program and libtuner.so need at run time.
for elf in "$program" "$library"; do
  needed=$(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [ -n "$needed" ] || fail "readelf found no NEEDED entries in $elf"
  bad=$(echo "$needed" | grep -Ei "$forbidden" || true)
  [ -z "$bad" ] || fail "$elf needs libraries of the service or the engine: $bad"
done
readelf -d "$library" | grep -q 'NEEDED.*libsqlite3' || fail "$library does not link SQLite"

# And the program runs: 8 trials asked and told, 8 by optimize(), on a SQLite file.
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$("$program" "$dir/study.db") || fail "$program failed: $out"
echo "$out"
echo "$out" | grep -q '^16 trials; best: trial' || fail "unexpected output of $program: $out"
[ "$status" = 0 ] && echo "ok: the ask/tell program links the tuning library alone"
exit "$status"
