#!/usr/bin/env bash
# The MLflow comparison: a model exported by `tuner`'s registry loads in MLflow itself
# (mlflow.pyfunc.load_model, then predict) and in onnxruntime, both give the engine's outputs
# (relative tolerance 1e-4), and the Python ONNX checker accepts model.onnx.
#   run_mlflow_interop.sh BUILD_DIR MLFLOW_EXPORT_DRIVER
# Uses mlflow, onnxruntime, onnx and numpy from PyPI in BUILD_DIR/mlflow-venv (created when
# missing).
set -euo pipefail
build=$1
driver=$2
here=$(cd "$(dirname "$0")" && pwd)

venv="$build/mlflow-venv"
if ! "$venv/bin/python" -c "import mlflow, onnxruntime, onnx, numpy" 2>/dev/null; then
  echo "mlflow interop: creating $venv with mlflow, onnxruntime, onnx and numpy from PyPI"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q mlflow onnxruntime onnx numpy
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_mlflow_interop.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$driver" "$work"
# MLflow writes nothing for a local load; keep its tracking and caches inside the work dir.
MLFLOW_TRACKING_URI="file://$work/mlruns" HOME="$work" \
  "$venv/bin/python" "$here/check_mlflow.py" "$work"
echo "mlflow interop: passed"
