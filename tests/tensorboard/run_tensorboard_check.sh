#!/usr/bin/env bash
# TensorBoard reads an engine trial's event file (issue 20, item 5): `tuner trial` trains the CLI
# test's tiny engine job for 2 epochs with an artifacts_dir, and tensorboard's own readers (from
# PyPI, in BUILD_DIR/tensorboard-venv, created when missing) must find the trial as a run of the
# log dir (EventMultiplexer, as `tensorboard --logdir` does) with one scalar per metric and epoch,
# equal to the epochs of its metrics.json.
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
echo PASS
