#!/usr/bin/env bash
# Failures that explain themselves, end to end with real processes: a crashing
# Python program stops the sweep after its first 3 failures, with the traceback's last line in the
# console and in `tuner trials`, and `tuner logs` prints the trial's whole log; a misspelt
# objective metric stops the sweep after its first trial, with a did-you-mean.
#   failures_cli_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/failures-cli-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

write_sweep() {  # FILE NAME METRIC SCRIPT [BUDGET_JSON]
  cat >"$1" <<JSON
{"version": 1, "name": "$2", "storage": "$work/$2.db",
 "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.1, "log": true}}},
 "objective": {"metric": "$3", "direction": "maximize"},
 "budget": ${5:-{\"trials\": 10\}},
 "sampler": {"type": "random", "seed": 1},
 "executors": {"local": 1},
 "job": {"kind": "command", "argv": ["python3", "$work/$4", "{lr}"]}}
JSON
}

cat >"$work/crash.py" <<'PY'
import sys
print("loading data", file=sys.stderr)
def train(lr):
    raise ValueError("learning rate %s diverged" % lr)
train(float(sys.argv[1]))
PY
write_sweep "$work/crash.json" crash val_accuracy crash.py
out=$(timeout 60 "$tuner" sweep "$work/crash.json" 2>&1); rc=$?
[ $rc = 1 ] || fail "crashing sweep: rc $rc (want 1), $out"
grep -q "trial 0 FAIL: exited with code 1" <<<"$out" || fail "no FAIL line: $out"
grep -q "    | ValueError: learning rate .* diverged" <<<"$out" || fail "no traceback line: $out"
grep -q "    log: $work/crash.db.logs/trial-0-lease-[0-9]*.log" <<<"$out" || fail "no log path: $out"
grep -q "sweep 'crash' stopped: the first 3 trials failed the same way .*the last, trial 2: exited with code 1: ValueError: learning rate" <<<"$out" ||
  fail "no stop reason: $out"
grep -q "tuner logs --study crash --storage $work/crash.db --trial N" <<<"$out" || fail "no tuner logs hint: $out"
# A trial that had started by then is stopped (FAIL "abandoned", run first on resume); no other.
grep -q "trial [4-9] " <<<"$out" && fail "trials ran after the stop: $out"

table=$("$tuner" trials --study crash --storage "$work/crash.db") || fail "trials: $table"
[ "$(grep -c 'exited with code 1: ValueError' <<<"$table")" = 3 ] || fail "want 3 crashed trials: $table"
grep -q "fail reason" <<<"$table" || fail "no fail reason column: $table"
grep -q "^2 .*FAIL .*exited with code 1: ValueError: learning rate" <<<"$table" || fail "trials table: $table"
json=$("$tuner" trials --study crash --storage "$work/crash.db" --json | head -1)
python3 - "$json" <<'PY' || fail "trials --json: $json"
import json, sys
t = json.loads(sys.argv[1])
assert t["fail_reason"] == "exited with code 1", t
assert "ValueError: learning rate" in t["log_tail"], t
PY
csv=$("$tuner" trials --study crash --storage "$work/crash.db" --csv)
grep -q "exited with code 1: ValueError: learning rate" <<<"$csv" || fail "trials --csv: $csv"

log=$("$tuner" logs --study crash --storage "$work/crash.db" --trial 1); rc=$?
[ $rc = 0 ] || fail "logs: rc $rc, $log"
grep -q "^==> trial 1, lease [0-9]*: .*trial-1-lease-[0-9]*.log <==" <<<"$log" || fail "logs header: $log"
grep -q "^loading data" <<<"$log" && grep -q "^Traceback (most recent call last):" <<<"$log" &&
  grep -q "^ValueError: learning rate" <<<"$log" || fail "logs: $log"
out=$("$tuner" logs --study crash --storage "$work/crash.db" --trial 1 --log-dir "$work/none" 2>&1); rc=$?
[ $rc != 0 ] && grep -q "no log of trial 1 in $work/none" <<<"$out" || fail "logs without a folder: rc $rc, $out"
out=$("$tuner" logs --study crash --storage "$work/crash.db" --trial 7 2>&1); rc=$?
[ $rc != 0 ] && grep -q "has no trial 7" <<<"$out" || fail "logs of a trial that did not run: rc $rc, $out"

# budget.max_failures null: no limit, every trial runs (and the run exits 1: all failed).
write_sweep "$work/nolimit.json" nolimit val_accuracy crash.py '{"trials": 4, "max_failures": null}'
out=$(timeout 60 "$tuner" sweep "$work/nolimit.json" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "every trial of this run failed (4)" <<<"$out" || fail "max_failures null: rc $rc, $out"

# A misspelt objective metric: the sweep stops after the first trial, with a did-you-mean.
cat >"$work/fit.py" <<'PY'
import json, sys
for step in range(1, 3):
    print(json.dumps({"step": step, "val_accuracy": 0.5 + step / 10, "train_loss": 1 / step}), flush=True)
print(json.dumps({"val_accuracy": 0.7, "train_loss": 0.5}))
PY
write_sweep "$work/metric.json" metric val_acc fit.py
out=$(timeout 60 "$tuner" sweep "$work/metric.json" 2>&1); rc=$?
[ $rc = 1 ] || fail "misspelt metric: rc $rc, $out"
grep -q "stopped: trial 0 ended without the objective metric 'val_acc' (did you mean \"val_accuracy\"?)" <<<"$out" ||
  fail "misspelt metric: $out"
grep -q "trial [2-9] " <<<"$out" && fail "trials ran after the missing metric: $out"
echo PASS
