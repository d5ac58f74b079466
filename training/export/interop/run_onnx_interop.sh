#!/usr/bin/env bash
# The onnxruntime comparison: models exported by the engine run in onnxruntime and give the
# engine's eval-mode outputs (relative tolerance 1e-4), and the Python ONNX checker accepts them.
#   run_onnx_interop.sh BUILD_DIR ONNX_EXPORT_DRIVER
# Uses onnxruntime, onnx and numpy from PyPI in BUILD_DIR/onnx-venv (created when missing).
set -euo pipefail
build=$1
driver=$2
here=$(cd "$(dirname "$0")" && pwd)

venv="$build/onnx-venv"
if ! "$venv/bin/python" -c "import onnxruntime, onnx, numpy" 2>/dev/null; then
  echo "onnx interop: creating $venv with onnxruntime, onnx and numpy from PyPI"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q onnxruntime onnx numpy
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_onnx_interop.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$driver" "$work"
"$venv/bin/python" "$here/check_onnxruntime.py" "$work"
echo "onnx interop: passed"
