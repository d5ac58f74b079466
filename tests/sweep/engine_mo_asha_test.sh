#!/usr/bin/env bash
# Early stopping of an engine sweep with two objectives, end to end: validation accuracy
# (maximized) against the batch-1 inference latency (minimized), under MO-ASHA, on a small made
# table (format csv). The engine reports its model's latency and size at every epoch (the latency
# measured once per trial: the same at each step, and the final value), so the scheduler judges
# both: some trials are stopped at a rung, each decision is the one a brute-force non-dominated
# sort of the stored step values makes (the trials run one at a time, so a trial's competitors at
# a rung are the trials before it), and `tuner trials` and the report mark the stopped trials.
#   engine_mo_asha_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/engine-mo-asha-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 - "$work/data.csv" <<'PY' || fail "cannot write the table"
import random, sys
rng = random.Random(7)
with open(sys.argv[1], "w") as f:
    f.write("a,b,c,d,label\n")
    for _ in range(400):
        x = [rng.uniform(-1, 1) for _ in range(4)]
        label = ("low", "mid", "high")[(x[0] * x[1] > 0) + (x[2] + x[3] > 0.5)]
        f.write(",".join(f"{v:.4f}" for v in x) + f",{label}\n")
PY

cat >"$work/mo.json" <<JSON
{"version": 1, "name": "engine_mo_asha",
 "space": {"params": {"width": {"type": "int", "low": 2, "high": 128, "log": true},
                      "lr": {"type": "float", "low": 0.001, "high": 0.1, "log": true}}},
 "objectives": [{"metric": "val_accuracy", "direction": "maximize"},
                {"metric": "latency_ms", "direction": "minimize"}],
 "sampler": {"type": "random", "seed": 3},
 "scheduler": {"type": "mo_asha", "min_resource": 1, "reduction_factor": 2, "max_resource": 4},
 "budget": {"trials": 10, "max_concurrent": 1},
 "executors": {"local": 1},
 "job": {"kind": "engine",
         "model": {"layers": [{"type": "linear", "out": "{width}"}, {"type": "relu"},
                              {"type": "linear", "out": "classes"}]},
         "data": {"format": "csv", "dir": "$work", "path": "data.csv", "label": "label",
                  "validation_fraction": 0.25},
         "training": {"epochs": 4, "batch_size": 32, "optimizer": "adam", "lr": "{lr}"},
         "objective_metric": "val_accuracy"}}
JSON
db="$work/mo.db"
out=$(timeout 300 "$tuner" sweep "$work/mo.json" --storage "$db" 2>&1) || fail "sweep exited $?: $out"
grep -q "10/10 done" <<<"$out" || fail "no summary in: $out"

python3 - "$db" "$(dirname "$0")" <<'PY' || fail "decisions"
import json, math, sys
sys.path.insert(0, sys.argv[-1])
import mo_asha_check
names = ["val_accuracy", "latency_ms"]  # trial_id -> step -> [accuracy, latency]
trials, steps, stopped, db = mo_asha_check.read_study(sys.argv[1], names)
final_latency = {tid: json.loads(v) for tid, v in db.execute(
    "SELECT trial_id, value_json FROM trial_user_attributes WHERE key = 'latency_ms'")}
sizes = {}  # trial_id -> {num_params}
for tid, value in db.execute(
        "SELECT trial_id, value FROM tuner_trial_step_metrics WHERE name = 'num_params'"):
    sizes.setdefault(tid, set()).add(value)
states = [s for _, s in trials.values()]
assert "PRUNED" in states and "COMPLETE" in states, states
rungs = [1, 2]  # min_resource 1, reduction_factor 2, below max_resource 4

for tid, state in trials.values():
    # Every epoch reports both objectives; the latency is one measurement, also the final value.
    assert sorted(steps[tid]) == list(range(1, len(steps[tid]) + 1)), steps[tid]
    latencies = {v[1] for v in steps[tid].values()}
    assert len(latencies) == 1 and all(math.isfinite(x) and x > 0 for x in latencies), steps[tid]
    assert len(sizes.get(tid, ())) == 1, sizes.get(tid)  # the model's size, at every epoch
    if state == "COMPLETE":
        assert len(steps[tid]) == 4, (tid, steps[tid])
        assert final_latency[tid] == latencies.pop(), (final_latency[tid], steps[tid])

decided = mo_asha_check.check_rung_decisions(trials, steps, stopped, rungs, 2,
                                              lambda v: [-v[0], v[1]])
print("decisions checked:", decided)
PY

# `tuner trials` lists the stopped trials as PRUNED; the report marks each with its step.
pruned=$(python3 -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute(
    "SELECT count(*) FROM trials WHERE state = ?", ("PRUNED",)).fetchone()[0])' "$db")
listed=$("$tuner" trials --study engine_mo_asha --storage "$db" --state PRUNED --csv 2>&1) ||
  fail "trials: $listed"
[ "$(tail -n +2 <<<"$listed" | grep -c ",PRUNED,")" = "$pruned" ] ||
  fail "tuner trials lists not $pruned PRUNED trials: $listed"
"$tuner" report --study engine_mo_asha --storage "$db" --out "$work/r.html" >/dev/null 2>&1 ||
  fail "report"
marks=$(grep -o 'class="stopped"' "$work/r.html" | wc -l)
[ "$marks" = "$pruned" ] || fail "the report marks $marks of $pruned stopped trials"
echo PASS
