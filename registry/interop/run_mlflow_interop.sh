#!/usr/bin/env bash
# The MLflow comparison: a model exported by `tuner`'s registry loads in MLflow itself
# (mlflow.pyfunc.load_model, then predict) and in onnxruntime, both give the engine's outputs
# (relative tolerance 1e-4), and the Python ONNX checker accepts model.onnx. With TUNER, also a
# command trial's own model: a sweep whose scikit-learn program saves mlflow.sklearn.save_model
# into $TUNER_ARTIFACTS_DIR/model, `tuner export --mlflow-uri` against a real `mlflow server` on
# loopback, and mlflow.pyfunc.load_model("models:/NAME@champion") predicting as the trial
# measured (check_user_model.py).
#   run_mlflow_interop.sh BUILD_DIR MLFLOW_EXPORT_DRIVER [TUNER]
# Uses mlflow, onnxruntime, onnx, numpy and scikit-learn from PyPI in BUILD_DIR/mlflow-venv
# (created when missing).
set -euo pipefail
build=$1
driver=$2
tuner=${3:+$(realpath "$3")}
here=$(cd "$(dirname "$0")" && pwd)

venv="$(realpath "$build")/mlflow-venv"
if ! "$venv/bin/python" -c "import mlflow, onnxruntime, onnx, numpy, sklearn" 2>/dev/null; then
  echo "mlflow interop: creating $venv with mlflow, onnxruntime, onnx, numpy and scikit-learn from PyPI"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q mlflow onnxruntime onnx numpy scikit-learn
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_mlflow_interop.XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$driver" "$work"
# MLflow writes nothing for a local load; keep its tracking and caches inside the work dir.
MLFLOW_TRACKING_URI="file://$work/mlruns" HOME="$work" \
  "$venv/bin/python" "$here/check_mlflow.py" "$work"
if [ -z "$tuner" ]; then
  echo "mlflow interop: passed"
  exit 0
fi

# A command trial's own scikit-learn model, through MLflow's registry.
export HOME="$work"
unset MLFLOW_TRACKING_URI
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
uri="http://127.0.0.1:$port"
"$venv/bin/mlflow" server --backend-store-uri "sqlite:///$work/mlflow.db" --serve-artifacts \
  --artifacts-destination "$work/mlflow-artifacts" --host 127.0.0.1 --port "$port" --workers 1 \
  > "$work/server.log" 2>&1 &
server_pid=$!
mkdir -p "$work/iris"
cat > "$work/iris/train.py" <<'PY'
import json, os
import mlflow.sklearn
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
c = json.loads(os.environ["TUNER_PARAMS"])["C"]
x, y = load_iris(return_X_y=True)
model = LogisticRegression(C=c, max_iter=500).fit(x[::2], y[::2])
mlflow.sklearn.save_model(model, os.path.join(os.environ["TUNER_ARTIFACTS_DIR"], "model"))
print(json.dumps({"val_accuracy": model.score(x[1::2], y[1::2])}))
PY
cat > "$work/iris/iris.json" <<JSON
{"name": "iris",
 "space": {"params": {"C": {"type": "float", "low": 0.001, "high": 10, "log": true}}},
 "objective": {"metric": "val_accuracy", "direction": "maximize"},
 "sampler": {"type": "random", "seed": 2}, "budget": {"trials": 2},
 "job": {"kind": "command", "argv": ["$venv/bin/python", "train.py"]},
 "executors": {"local": 2}}
JSON
(cd "$work/iris" && "$tuner" sweep iris.json > "$work/sweep.out" 2>&1) ||
  { cat "$work/sweep.out"; fail "tuner sweep of the scikit-learn program"; }
for _ in $(seq 1 240); do
  if curl -sf -m 2 "$uri/health" > /dev/null; then break; fi
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "mlflow server exited"; }
  sleep 0.5
done
db="$work/iris/iris.db"
reg="$work/iris/registry"
"$tuner" export --study iris --storage "$db" --registry "$reg" --name iris-clf \
  --promote-if-better --mlflow-uri "$uri" > "$work/export.out" 2>&1 ||
  { cat "$work/export.out" "$work/server.log" >&2; fail "tuner export --mlflow-uri"; }
cat "$work/export.out"
grep -q "the trial's MLflow model, as it is, of flavors python_function, sklearn" "$work/export.out" ||
  fail "the export did not take the trial's MLflow model"
grep -q "MLflow: iris-clf version 1 from run .*@champion" "$work/export.out" ||
  fail "the version is not MLflow's champion"
"$venv/bin/python" "$here/check_user_model.py" "$uri" iris-clf "$reg" "$db"
echo "mlflow interop: passed"
