#!/usr/bin/env bash
# MLflow tracking and MLflow's model registry against a real `mlflow server` (SQLite backend,
# artifacts served), read back with MLflow's own client (check_tracking.py):
#   1. a command sweep with --tracking-uri: a study run, a run per trial, params, every step's
#      metrics with their stored times, each trial's files among its run's artifacts;
#   2. tuner sync-mlflow twice, and once more without its record: no run is duplicated;
#   3. a sweep whose server is stopped while it runs: it ends with exit 0 and one warning, and
#      its resume, the server back, catches up without duplicates; its trials report an extra
#      metric per step (train_loss) and leave a file of their own, both in MLflow;
#   4. an engine sweep with tracking and an export section with "mlflow": per-epoch and system
#      metrics, the champion in MLflow's registry, mlflow.pyfunc.load_model("models:/M@champion")
#      predicting the test slice as the trial measured it; then tuner export --mlflow-uri of
#      another trial, the aliases of both registries in step.
#   run_mlflow_tracking.sh BUILD_DIR TUNER
# Uses mlflow, onnxruntime, onnx and numpy from PyPI in BUILD_DIR/mlflow-venv (created when
# missing; skipped when PyPI cannot be reached).
set -euo pipefail
build=$1
tuner=$2
here=$(cd "$(dirname "$0")" && pwd)
data=${TUNER_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

venv="$build/mlflow-venv"
if ! "$venv/bin/python" -c "import mlflow, onnxruntime, onnx, numpy" 2>/dev/null; then
  echo "mlflow tracking: creating $venv with mlflow, onnxruntime, onnx and numpy from PyPI"
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install -q mlflow onnxruntime onnx numpy; then
    if ! "$venv/bin/pip" download -q --no-deps -d "$(mktemp -d)" six >/dev/null 2>&1; then
      echo "skipped: PyPI is unreachable (mlflow cannot be installed into $venv)"
      exit 0
    fi
    echo "FAIL: pip install mlflow onnxruntime onnx numpy failed" >&2
    exit 1
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_mlflow_tracking.XXXXXX")
server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap 'stop_server; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect PATTERN FILE
  grep -q -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in the output above"; }
}
export HOME="$work"  # MLflow's caches and its client's files stay in the work dir
unset MLFLOW_TRACKING_URI
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
uri="http://127.0.0.1:$port"

start_server() {
  "$venv/bin/mlflow" server --backend-store-uri "sqlite:///$work/mlflow.db" --serve-artifacts \
    --artifacts-destination "$work/mlflow-artifacts" --host 127.0.0.1 --port "$port" --workers 1 \
    >> "$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 240); do
    if curl -sf -m 2 "$uri/health" > /dev/null; then return 0; fi
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "mlflow server exited"; }
    sleep 0.5
  done
  cat "$work/server.log" >&2
  fail "mlflow server did not answer on $uri within 120 s"
}
check() { "$venv/bin/python" "$here/check_tracking.py" "$@"; }
count_runs() {  # count_runs STUDY: the runs of the study's experiment
  "$venv/bin/python" -c "
import sys
from mlflow import MlflowClient
c = MlflowClient('$uri')
e = c.get_experiment_by_name(sys.argv[1])
print(len(c.search_runs([e.experiment_id], max_results=5000)))" "$1"
}

start_server
echo "mlflow tracking: $("$venv/bin/python" -c 'import mlflow; print("mlflow", mlflow.__version__)') at $uri"

# 1. A command sweep, tracked.
mkdir -p "$work/sweeps" "$work/command"
cp "$here/../../examples/sweeps/quadratic_command.json" "$work/sweeps/"
cp "$here/../../examples/command/train_quadratic.py" "$work/command/"
"$tuner" sweep "$work/sweeps/quadratic_command.json" --trials 8 --tracking-uri "$uri" \
  > "$work/sweep1.out" 2>&1 || { cat "$work/sweep1.out"; fail "tuner sweep with tracking"; }
if grep -q "warning" "$work/sweep1.out"; then cat "$work/sweep1.out"; fail "warnings with the server up"; fi
db="$work/sweeps/quadratic.db"
check runs "$uri" quadratic "$db"
runs=$(count_runs quadratic)
[ "$runs" = 9 ] || fail "quadratic: $runs runs, want 9 (the study's and 8 trials')"

# 2. sync-mlflow after the fact is idempotent, with its record and without it.
"$tuner" sync-mlflow --study quadratic --storage "$db" --tracking-uri "$uri" > "$work/sync1.out"
cat "$work/sync1.out"
expect ": 0 runs created" "$work/sync1.out"
"$venv/bin/python" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('DELETE FROM tuner_mlflow_runs'); c.commit()" "$db"
"$tuner" sync-mlflow --study quadratic --storage "$db" --tracking-uri "$uri" > "$work/sync2.out"
expect ": 0 runs created" "$work/sync2.out"
[ "$(count_runs quadratic)" = 9 ] || fail "runs duplicated by sync-mlflow without its record"
check runs "$uri" quadratic "$db"

# 3. The server stops while a sweep runs: the sweep succeeds, says so once, and its resume
#    catches up when the server is back.
cp "$here/slow_trial.py" "$work/command/"
cat > "$work/sweeps/slow.json" <<JSON
{"name": "slow", "space": {"params": {"x": {"type": "float", "low": -3, "high": 3}}},
 "objective": {"metric": "loss", "direction": "minimize"},
 "sampler": {"type": "random", "seed": 5}, "budget": {"trials": 8},
 "tracking": {"mlflow": {"uri": "$uri", "interval": "1s"}},
 "job": {"kind": "command", "argv": ["python3", "../command/slow_trial.py"]},
 "executors": {"local": 2}}
JSON
slow_db="$work/sweeps/slow.db"
"$tuner" sweep "$work/sweeps/slow.json" > "$work/slow.out" 2>&1 &
sweep_pid=$!
# Once two trial runs are recorded as sent, the server goes away.
for _ in $(seq 1 200); do
  sent=$("$venv/bin/python" -c "
import sqlite3, sys
try:
    print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM tuner_mlflow_runs WHERE trial_number >= 0').fetchone()[0])
except Exception:
    print(0)" "$slow_db")
  [ "$sent" -ge 2 ] && break
  sleep 0.2
done
[ "$sent" -ge 2 ] || { cat "$work/slow.out"; fail "no trial run was sent before stopping the server"; }
stop_server
started=$(date +%s)
wait "$sweep_pid" || { cat "$work/slow.out"; fail "the sweep failed because its tracking server stopped"; }
cat "$work/slow.out"
expect "sweep 'slow': 8/8 done" "$work/slow.out"
[ "$(grep -c "warning: MLflow tracking: " "$work/slow.out")" = 1 ] ||
  fail "want one warning for the outage, not one per pass or trial"
expect "warning: MLflow tracking is behind" "$work/slow.out"
expect "tuner sync-mlflow --study slow" "$work/slow.out"
start_server
"$tuner" resume --study slow --storage "$slow_db" --trials 10 > "$work/resume.out" 2>&1 ||
  { cat "$work/resume.out"; fail "tuner resume"; }
if grep -q "warning" "$work/resume.out"; then cat "$work/resume.out"; fail "warnings on resume"; fi
# Each trial left its own file in its folder (TUNER_ARTIFACTS_DIR); check_tracking.py finds
# every file of each folder among its run's artifacts.
notes=$(ls "$slow_db.artifacts/slow"/trial-*/notes/summary.txt 2>/dev/null | wc -l)
[ "$notes" = 10 ] || fail "slow: $notes trials wrote notes/summary.txt to TUNER_ARTIFACTS_DIR, want 10"
check runs "$uri" slow "$slow_db" train_loss
[ "$(count_runs slow)" = 11 ] || fail "slow: $(count_runs slow) runs, want 11 (the study's and 10 trials')"

# 4. An engine sweep: per-epoch and system metrics, and the model in MLflow's registry.
if [ ! -f "$data/t10k-images-idx3-ubyte.gz" ]; then
  echo "mlflow tracking: engine part skipped: install Debian's dataset-fashion-mnist"
  echo "mlflow tracking: passed"
  exit 0
fi
mkdir -p "$work/engine"
"$venv/bin/python" - "$here/../../registry/testdata/tiny_sweep.json" "$work/engine/tiny.json" "$uri" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["name"] = "tiny-tracked"
s["budget"] = {"trials": 3}
s["job"]["training"]["epochs"] = 3
s["tracking"] = {"mlflow": {"uri": sys.argv[3], "interval": "1s"}}
s["export"] = {"registry": "registry", "name": "tiny-mlp", "mlflow": {}}
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
"$tuner" sweep "$work/engine/tiny.json" --executors 2 > "$work/engine.out" 2>&1 ||
  { cat "$work/engine.out"; fail "engine sweep with tracking"; }
cat "$work/engine.out"
expect "registered in MLflow at $uri as tiny-mlp version 1 @champion" "$work/engine.out"
edb="$work/engine/tiny-tracked.db"
reg="$work/engine/registry"
check engine "$uri" tiny-tracked "$edb" tiny-mlp "$data" "$reg"
# Another trial by hand, as a challenger: MLflow gets version 2 and both aliases as the file
# registry has them; a second registration finds it.
best=$(grep -o "exported trial [0-9]*" "$work/engine.out" | grep -o "[0-9]*$")
other=$(( (best + 1) % 3 ))
"$tuner" export --study tiny-tracked --storage "$edb" --trial "$other" --registry "$reg" \
  --name tiny-mlp --alias challenger --mlflow-uri "$uri" > "$work/export.out"
cat "$work/export.out"
expect "MLflow: tiny-mlp version 2 from run" "$work/export.out"
expect "@challenger" "$work/export.out"
"$tuner" sync-mlflow --study tiny-tracked --storage "$edb" --tracking-uri "$uri" --registry "$reg" \
  > "$work/sync3.out"
cat "$work/sync3.out"
expect "registered in MLflow: tiny-mlp: versions 1, 2 (0 new); aliases challenger -> 2, champion -> 1" "$work/sync3.out"
check engine "$uri" tiny-tracked "$edb" tiny-mlp "$data" "$reg"

# 5. A study submitted to tuner serve is tracked by the tuner sweep --submit that follows it.
sdb="$work/sweeps/served.db"
"$tuner" serve --storage "$sdb" --endpoint "ipc://$work/serve.sock" --executors 2 \
  > "$work/serve.out" 2>&1 &
serve_pid=$!
for _ in $(seq 1 100); do grep -q "listening on" "$work/serve.out" && break; sleep 0.05; done
sed -e 's/"name": "quadratic"/"name": "served"/' "$work/sweeps/quadratic_command.json" \
  > "$work/sweeps/served.json"
"$tuner" sweep "$work/sweeps/served.json" --storage "$sdb" --trials 5 --submit --tracking-uri "$uri" \
  > "$work/submit.out" 2>&1 || { cat "$work/submit.out" "$work/serve.out"; fail "tuner sweep --submit"; }
kill -INT "$serve_pid"; wait "$serve_pid" || true
if grep -q "warning" "$work/submit.out"; then cat "$work/submit.out"; fail "warnings with the server up"; fi
check runs "$uri" served "$sdb"
[ "$(count_runs served)" = 6 ] || fail "served: $(count_runs served) runs, want 6 (the study's and 5 trials')"
echo "mlflow tracking: passed"
