#!/usr/bin/env bash
# Regression: a hanging trial ran until a second Ctrl-C, even past budget.time.
# - budget.trial_time: a trial that hangs is stopped after it (SIGTERM to its process group), stored
#   FAIL "timed out after 1 s ...", not run again, and the sweep goes on to its end;
# - budget.time: the sweep ends on time, the trial still running is stopped, stored FAIL and
#   queued with its params for a resume.
# Each sweep runs a grid of two trials on two local slots: x = 1 completes at once, x = 0 hangs.
#   trial_timeout_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/trial-timeout-$$"
source "$(dirname "$0")/process_test_lib.sh"

# A sleep of a length no other process has, to find what a trial left behind.
hang=$((3000000 + $$))

# sweep_file NAME BUDGET: a sweep whose trial x = 0 hangs.
sweep_file() {
  cat >"$work/$1.json" <<JSON
{"version": 1, "name": "$1",
 "space": {"params": {"x": {"type": "categorical", "choices": [0, 1]}}},
 "objective": {"metric": "loss", "direction": "minimize"},
 "sampler": {"type": "grid"},
 "budget": $2,
 "job": {"kind": "command",
         "argv": ["/bin/sh", "-c", "if [ {x} = 0 ]; then exec sleep $hang; fi; echo '{{\"loss\": 1}}'"]},
 "executors": {"local": 2}}
JSON
}

# Each trial of study $2 in database $1, in the order of x: "x=X STATE fail_reason", and for a
# WAITING trial "STATE fixed_params"; the grid's order is its own.
trial_rows() {
  python3 - "$1" "$2" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
lines = []
for trial_id, state in db.execute(
        "SELECT t.trial_id, t.state FROM trials t JOIN studies s ON s.study_id = t.study_id "
        "WHERE s.study_name = ?", (sys.argv[2],)):
    attrs = dict(db.execute("SELECT key, value_json FROM trial_system_attributes "
                            "WHERE trial_id = ?", (trial_id,)))
    x = db.execute("SELECT param_value FROM trial_params WHERE trial_id = ? AND "
                   "param_name = 'x'", (trial_id,)).fetchone()
    if x is None:  # a WAITING trial enqueued with fixed_params only
        lines.append(f"{state} {attrs.get('fixed_params', '')}")
    else:  # x is categorical [0, 1]: the index is the value (a re-run has its params too)
        reason = json.loads(attrs["fail_reason"]) if "fail_reason" in attrs else ""
        lines.append(f"x={int(x[0])} {state} {reason}".rstrip())
print("\n".join(sorted(lines)))
PY
}

no_hanging_sleep() {
  for _ in $(seq 1 100); do
    pgrep -f "sleep $hang" >/dev/null || return 0
    sleep 0.02
  done
  fail "$1: a trial's process is still running: $(pgrep -af "sleep $hang")"
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# budget.trial_time: the hanging trial is FAIL after 1 s and the sweep ends with the grid.
sweep_file timed '{"trial_time": "1s"}'
start=$(now_ms)
out=$(timeout -k 5 30 "$tuner" sweep "$work/timed.json" --storage "$work/timed.db" 2>&1); rc=$?
took=$(( $(now_ms) - start ))
[ $rc = 0 ] || fail "trial_time sweep exited $rc after $took ms: $out"
[ $took -lt 15000 ] || fail "trial_time sweep took $took ms: $out"
grep -q 'trial [01] FAIL: timed out after 1 s (the job'"'"'s timeout_s); killed by signal 15 (SIGTERM)' <<<"$out" ||
  fail "no timed-out trial in: $out"
rows=$(trial_rows "$work/timed.db" timed)
expected="x=0 FAIL timed out after 1 s (the job's timeout_s); killed by signal 15 (SIGTERM)
x=1 COMPLETE"
[ "$rows" = "$expected" ] || fail "trial_time: the trials are (a timed-out trial is not re-run):
$rows"
no_hanging_sleep "trial_time"

# budget.time: the sweep ends at 2 s (+ a grace of 5%), with the hanging trial stopped, FAIL and
# queued again; before the fix it waited for the trial forever.
sweep_file budget '{"time": 2}'
start=$(now_ms)
out=$(timeout -k 5 30 "$tuner" sweep "$work/budget.json" --storage "$work/budget.db" 2>&1); rc=$?
took=$(( $(now_ms) - start ))
[ $rc = 0 ] || fail "time budget sweep exited $rc after $took ms: $out"
[ $took -ge 2000 ] && [ $took -lt 12000 ] || fail "time budget sweep took $took ms: $out"
grep -q "the time budget ran out (1 running trial(s) stopped: FAIL, and run first on resume); to go on: tuner resume --study budget" <<<"$out" ||
  fail "no time-up summary in: $out"
rows=$(trial_rows "$work/budget.db" budget)
expected='x=0 FAIL abandoned: the sweep'"'"'s time budget ran out
x=0 WAITING
x=1 COMPLETE'
[ "$rows" = "$expected" ] || fail "time budget: the trials are:
$rows"
no_hanging_sleep "time budget"
echo "PASS"
