#!/usr/bin/env bash
# PBT on an engine job whose epochs take a few milliseconds: a segment must end at its own last
# epoch (not an epoch or more past it before SIGTERM reaches it), with its final metrics and
# test accuracy, and continue from its parent's checkpoint and best model. The population's last
# segments end at max_steps, before the job's own epochs, so they are paused like every other.
# Guards a paused engine segment without test metrics and with a checkpoint past its end.
#   pbt_engine_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/pbt-engine-$$"
source "$(dirname "$0")/process_test_lib.sh"

cat >"$work/pbt.json" <<JSON
{
  "version": 1,
  "name": "pbt",
  "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.5, "log": true}}},
  "objective": {"metric": "val_accuracy", "direction": "maximize"},
  "sampler": {"type": "random", "seed": 1},
  "scheduler": {"type": "pbt", "population_size": 4, "perturbation_interval": 2, "max_steps": 6,
                "seed": 1},
  "executors": {"local": 2},
  "job": {
    "kind": "engine",
    "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 16},
                                               {"type": "relu"}, {"type": "linear", "out": 10}]},
    "data": {"dataset": "fashion-mnist", "train": 600, "validation": 200, "test": 200},
    "training": {"epochs": 10, "batch_size": 64, "optimizer": "sgd", "lr": "{lr}", "seed": 1},
    "threads": 1,
    "backend": "cpu",
    "objective_metric": "val_accuracy"
  }
}
JSON
db="$work/pbt.db"
out=$("$tuner" sweep "$work/pbt.json" --storage "$db" 2>&1) || fail "sweep: $out"
"$tuner" trials --storage "$db" --study pbt --json >"$work/trials.jsonl" || fail "trials --json"
python3 - "$work/trials.jsonl" "$db.artifacts/pbt" <<'PY' || fail "the population: $out"
import json, os, sys
trials = [json.loads(line) for line in open(sys.argv[1])]
folder = sys.argv[2]
segments = set()
for t in trials:
    n, lineage = t["number"], t["pbt"]
    assert t["state"] == "COMPLETE", (n, t["state"])
    seg = lineage["segment"]
    segments.add((lineage["member"], seg))
    end = 2 * (seg + 1)
    assert sorted(int(s) for s in t["intermediate_values"]) == [end - 1, end], (n, t)
    attrs = t["user_attrs"]
    # Paused at its end, it measured its final metrics and the test split.
    assert "test_accuracy" in attrs, (n, attrs)
    assert 1 <= attrs["best_epoch"] <= end, (n, attrs["best_epoch"])
    # Its checkpoint (what the next segment starts from) is at its end, not past it.
    with open(os.path.join(folder, "trial-%d" % n, "resume.ckpt.history.json")) as f:
        epochs = [e["epoch"] for e in json.load(f)["epochs"]]
    assert epochs == list(range(1, end + 1)), (n, epochs)
    assert os.path.exists(os.path.join(folder, "trial-%d" % n, "model.ckpt")), n
assert segments == {(m, s) for m in range(4) for s in range(3)}, sorted(segments)
PY
echo "PASS"
