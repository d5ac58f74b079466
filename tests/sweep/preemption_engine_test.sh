#!/usr/bin/env bash
# A preempted engine trial resumes on another host from the checkpoint its executor sent: an
# engine job (the built-in trainer on a small made table, format csv) runs on a `tuner executor`
# with a --files-dir of its own, which is stopped (SIGTERM, as Slurm sends on preemption) once the
# trial has saved a few epochs; it sends the trial's checkpoint to the coordinator before its BYE,
# and a second executor, with another --files-dir (a host that shares nothing with the first),
# fetches it and resumes the re-run from its epoch, without a retry counted.
#   preemption_engine_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/preemption-engine-$$"
source "$(dirname "$0")/process_test_lib.sh"
export TUNER_DATA_CACHE_DIR="$work/cache"  # the parsed table's cache, kept out of $HOME
endpoint="ipc://$work/coordinator.sock"
db="$work/e.db"

python3 - "$work/data.csv" <<'PY' || fail "cannot write the table"
import random, sys
rng = random.Random(7)
with open(sys.argv[1], "w") as f:
    f.write("a,b,c,d,label\n")
    for _ in range(12000):
        x = [rng.uniform(-1, 1) for _ in range(4)]
        label = ("low", "mid", "high")[(x[0] * x[1] > 0) + (x[2] + x[3] > 0.5)]
        f.write(",".join(f"{v:.4f}" for v in x) + f",{label}\n")
PY
# Epochs of tens of milliseconds: the executor is stopped after the second, well before the 40th.
cat >"$work/e.json" <<JSON
{"version": 1, "name": "engine_preempted",
 "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.1, "log": true}}},
 "objective": {"metric": "val_accuracy", "direction": "maximize"},
 "sampler": {"type": "random", "seed": 3},
 "budget": {"trials": 1},
 "executors": {"local": 0},
 "job": {"kind": "engine",
         "model": {"layers": [{"type": "linear", "out": 64}, {"type": "relu"},
                              {"type": "linear", "out": "classes"}]},
         "data": {"format": "csv", "dir": "$work", "path": "data.csv", "label": "label"},
         "training": {"epochs": 40, "batch_size": 8, "optimizer": "adam", "lr": "{lr}",
                      "seed": 1},
         "threads": 1, "backend": "cpu",
         "objective_metric": "val_accuracy"}}
JSON
start_executor() {  # NAME: an executor of 1 slot, with a --files-dir of its own
  "$tuner" executor --connect "$endpoint" --slots 1 --files-dir "$work/files-$1" \
    --log-dir "$work/$1-logs" --heartbeat-ms 200 --timeout-ms 1000 --stop-grace-ms 5000 \
    >"$work/$1.out" 2>&1 &
  pids+=($!)
}
epochs_in() {  # the epochs in an engine checkpoint's history, 0 when it is not there (yet)
  python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["epochs"]))' "$1" 2>/dev/null ||
    echo 0
}

"$tuner" sweep "$work/e.json" --storage "$db" --endpoint "$endpoint" --verbose >"$work/sweep.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)

start_executor first; first_pid=$!
history="$work/files-first/engine_preempted/trial-0/resume.ckpt.history.json"
for _ in $(seq 1 600); do [ "$(epochs_in "$history")" -ge 2 ] && break; sleep 0.05; done
saved=$(epochs_in "$history")
[ "$saved" -ge 2 ] || fail "the trial did not checkpoint 2 epochs: $(cat "$work/first.out" "$work/sweep.out")"
[ "$saved" -lt 40 ] || fail "the trial ended before its executor was stopped: $(cat "$work/first.out")"
kill -TERM $first_pid
for _ in $(seq 1 200); do kill -0 $first_pid 2>/dev/null || break; sleep 0.05; done
kill -0 $first_pid 2>/dev/null && fail "the executor did not stop on SIGTERM: $(cat "$work/first.out")"
wait $first_pid || fail "the stopped executor exited $?: $(cat "$work/first.out")"
grep -q "trial 0 (lease .*): sent [0-9]* file(s) of its checkpoint to the coordinator" "$work/first.out" ||
  fail "the stopped executor did not send the trial's checkpoint: $(cat "$work/first.out")"

start_executor second
for _ in $(seq 1 600); do kill -0 $sweep_pid 2>/dev/null || break; sleep 0.1; done
kill -0 $sweep_pid 2>/dev/null && fail "the sweep did not finish in 60 s: $(cat "$work/sweep.out" "$work/second.out")"
wait $sweep_pid || fail "sweep exited $?: $(cat "$work/sweep.out")"
grep -q "sweep 'engine_preempted': 1/1 done (1 complete" "$work/sweep.out" || fail "no summary: $(cat "$work/sweep.out")"
grep -q "trial 1: resumes from the coordinator's copy of its checkpoint" "$work/second.out" ||
  fail "the re-run did not fetch the checkpoint: $(cat "$work/second.out")"
# The re-run's trainer resumed from an epoch the first attempt saved, not from the beginning.
resumed=$(sed -n 's/.*completed after 40 epoch(s) (resumed from epoch \([0-9]*\)).*/\1/p' \
  "$work"/second-logs/trial-1-lease-*.log)
[ -n "$resumed" ] && [ "$resumed" -ge 1 ] ||
  fail "the re-run did not resume from the sent checkpoint: $(cat "$work"/second-logs/*.log)"
# (The engine writes an epoch's history before its checkpoint, and a stop waits for both.)
[ "$resumed" -ge "$saved" ] ||
  fail "the re-run resumed from epoch $resumed, before the $saved the first attempt saved"
# Stored: the preempted attempt FAIL with its reason, the re-run COMPLETE with every epoch's
# value, and no retry counted.
python3 - "$db" <<'PY' || fail "the stored trials: $("$tuner" trials --storage "$db" --study engine_preempted)"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
trials = {n: {"state": s} for n, s in db.execute("SELECT number, state FROM trials")}
for number, key, value in db.execute(
        "SELECT t.number, a.key, a.value_json FROM trials t "
        "JOIN trial_system_attributes a ON a.trial_id = t.trial_id"):
    trials[number][key] = json.loads(value)
assert [t["state"] for _, t in sorted(trials.items())] == ["FAIL", "COMPLETE"], trials
assert trials[0]["fail_reason"].endswith(
    "was stopped (checkpoint saved); re-run without a retry counted"), trials[0]
assert trials[1]["tuner:preempted_attempts"] == 1, trials[1]
steps = sorted(s for (s,) in db.execute(
    "SELECT v.step FROM trial_intermediate_values v JOIN trials t ON t.trial_id = v.trial_id "
    "WHERE t.number = 1"))
assert steps == list(range(1, 41)), steps
PY
echo "PASS"
