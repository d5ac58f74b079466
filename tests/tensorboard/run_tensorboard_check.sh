#!/usr/bin/env bash
# TensorBoard reads the trials' event files, with tensorboard's own readers
# (from PyPI, in BUILD_DIR/tensorboard-venv, created when missing), which must find each trial as
# a run of the log dir (EventMultiplexer, as `tensorboard --logdir` does):
# - an engine trial: `tuner trial` trains the CLI test's tiny engine job for 2 epochs with an
#   artifacts_dir; one scalar per metric and epoch, equal to the epochs of its metrics.json;
# - command trials: a 3-trial sweep of the quadratic example, whose executor writes each report
#   into the default artifacts_dir; one scalar per report, equal to the study's intermediate
#   values.
#   run_tensorboard_check.sh BUILD_DIR TUNER_BINARY REPO_ROOT
set -uo pipefail
build=$1; tuner=$2; root=$3
venv="$build/tensorboard-venv"
if ! "$venv/bin/python" -c "import tensorboard" 2>/dev/null; then
  echo "tensorboard check: creating $venv with the latest tensorboard from PyPI"
  python3 -m venv "$venv" && "$venv/bin/pip" install -q tensorboard ||
    { echo "SKIP: tensorboard could not be installed from PyPI"; exit 0; }
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_tensorboard.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 - "$root/cli/testdata/engine_job.json" "$work/job.json" "$work/logs" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
job["artifacts_dir"] = sys.argv[3]
json.dump(job, open(sys.argv[2], "w"))
PY
out=$(TUNER_PARAMS='{"width": 16, "lr": 0.003}' TUNER_TRIAL_NUMBER=4 \
      "$tuner" trial --engine-job "$work/job.json" 2>&1) || {
  grep -q "install Debian's dataset-fashion-mnist" <<<"$out" && { echo "SKIP: no Fashion-MNIST"; exit 0; }
  echo "FAIL: tuner trial: $out"; exit 1; }
"$venv/bin/python" - "$work/logs" <<'PY' || { echo "FAIL: tensorboard read"; exit 1; }
import json, os, sys
from tensorboard.backend.event_processing import event_multiplexer
logdir = sys.argv[1]
mux = event_multiplexer.EventMultiplexer()
mux.AddRunsFromDirectory(logdir)
mux.Reload()
runs = mux.Runs()
assert list(runs) == ["trial-4"], runs
tags = set(runs["trial-4"]["scalars"])
for tag in ("train_loss", "val_loss", "val_accuracy", "lr", "epoch_seconds"):
    assert tag in tags, (tag, tags)
epochs = json.load(open(os.path.join(logdir, "trial-4", "metrics.json")))["epochs"]
for tag in ("train_loss", "val_accuracy"):
    events = mux.Scalars("trial-4", tag)
    assert [e.step for e in events] == [1, 2], events
    want = [e[tag] for e in epochs]
    got = [e.value for e in events]
    assert all(abs(a - b) <= 1e-6 * max(1, abs(b)) for a, b in zip(got, want)), (tag, got, want)
print("tensorboard read", sorted(tags))
PY
# Command trials: the example sweep, cut to 3 trials without a scheduler (so every step is run).
mkdir -p "$work/sweeps" "$work/command"
cp "$root/examples/command/train_quadratic.py" "$work/command/"
python3 - "$root/examples/sweeps/quadratic_command.json" "$work/sweeps/quadratic.json" <<'PY'
import json, sys
sweep = json.load(open(sys.argv[1]))
sweep["budget"] = {"trials": 3}
sweep.pop("scheduler")
json.dump(sweep, open(sys.argv[2], "w"))
PY
out=$("$tuner" sweep "$work/sweeps/quadratic.json" 2>&1) || { echo "FAIL: tuner sweep: $out"; exit 1; }
"$venv/bin/python" - "$work/sweeps/quadratic.db.artifacts/quadratic" "$work/sweeps/quadratic.db" <<'PY' || { echo "FAIL: tensorboard read (command trials)"; exit 1; }
import sqlite3, sys
from tensorboard.backend.event_processing import event_multiplexer
logdir, db = sys.argv[1], sys.argv[2]
mux = event_multiplexer.EventMultiplexer()
mux.AddRunsFromDirectory(logdir)
mux.Reload()
assert sorted(mux.Runs()) == ["trial-0", "trial-1", "trial-2"], mux.Runs()
rows = sqlite3.connect(db).execute(
    "SELECT t.number, v.step, v.intermediate_value FROM trial_intermediate_values v "
    "JOIN trials t ON t.trial_id = v.trial_id ORDER BY t.number, v.step").fetchall()
for number in range(3):
    want = [(step, value) for n, step, value in rows if n == number]
    got = [(e.step, e.value) for e in mux.Scalars(f"trial-{number}", "loss")]
    assert len(want) >= 5 and len(got) == len(want), (number, got, want)
    assert all(g[0] == w[0] and abs(g[1] - w[1]) <= 1e-6 * max(1, abs(w[1]))
               for g, w in zip(got, want)), (number, got, want)
# Every other metric of each step too: the script's "x", as the study stores it.
steps = sqlite3.connect(db).execute(
    "SELECT t.number, m.step, m.value FROM tuner_trial_step_metrics m "
    "JOIN trials t ON t.trial_id = m.trial_id WHERE m.name = 'x' ORDER BY t.number, m.step").fetchall()
for number in range(3):
    want = [(step, value) for n, step, value in steps if n == number]
    got = [(e.step, e.value) for e in mux.Scalars(f"trial-{number}", "x")]
    assert len(want) >= 5 and len(got) == len(want), (number, got, want)
    assert all(g[0] == w[0] and abs(g[1] - w[1]) <= 1e-6 * max(1, abs(w[1]))
               for g, w in zip(got, want)), (number, got, want)
print("tensorboard read command trials", [len(mux.Scalars(f"trial-{n}", "loss")) for n in range(3)])
PY
echo PASS
