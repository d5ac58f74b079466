#!/usr/bin/env bash
# `tuner sweep` and the commands around it as a user meets them, on the command-job example:
# a sweep to its budget; status, trials and best; a first Ctrl-C that lets running trials finish
# and prints how to resume; resume; a second Ctrl-C that stops at once and leaves no trial RUNNING;
# sweeps that no executor could run are refused.
#   sweep_cli_test.sh TUNER_BINARY REPO_ROOT WORK_DIR
set -uo pipefail
tuner="$1"; root="$2"; work="$3/sweep-cli-$$"
sweep="$root/examples/sweeps/quadratic_command.json"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
db="$work/q.db"

out=$("$tuner" sweep "$sweep" --storage "$db" --trials 4 2>&1) || fail "sweep exited $?: $out"
grep -q "sweep 'quadratic': 4/4 done" <<<"$out" || fail "no summary in: $out"
grep -q "best loss" <<<"$out" || fail "no best trial in: $out"

out=$("$tuner" status --storage "$db") || fail "status: $out"
grep -q "^quadratic: 4 trials" <<<"$out" || fail "status says: $out"
[ "$("$tuner" trials --storage "$db" --study quadratic --csv | wc -l)" = 5 ] || fail "csv rows"
"$tuner" trials --storage "$db" --study quadratic --json | python3 -c '
import json, sys
rows = [json.loads(line) for line in sys.stdin]
assert len(rows) == 4 and all("params" in r and "state" in r for r in rows), rows
# Every metric of every step is kept: the objective and the extra "x" the script prints.
for r in rows:
    steps = r["step_metrics"]
    assert steps.keys() == r["intermediate_values"].keys(), r
    assert all(set(m) == {"loss", "x"} for m in steps.values()), r
    assert all(m["loss"] == r["intermediate_values"][s] for s, m in steps.items()), r' || fail "json"
"$tuner" best --storage "$db" --study quadratic | grep -q "^trial [0-9]*: value" || fail "best"
out=$("$tuner" best --storage "$db" --study nope 2>&1); rc=$?
[ $rc = 1 ] && grep -q "its studies: quadratic" <<<"$out" || fail "unknown study: rc $rc, $out"

# Waits until the study in $1 has at least $2 finished trials.
wait_for_trials() {
  for _ in $(seq 1 200); do
    n=$("$tuner" trials --storage "$1" --study quadratic --state complete,pruned,fail --csv 2>/dev/null | tail -n +2 | wc -l)
    [ "$n" -ge "$2" ] && return 0
    sleep 0.05
  done
  fail "no $2 finished trials in $1"
}

# First Ctrl-C: running trials finish, exit 130, the resume command is printed.
db2="$work/q2.db"
"$tuner" sweep "$sweep" --storage "$db2" --trials 1000 >"$work/out2" 2>&1 & pid=$!
wait_for_trials "$db2" 2
kill -INT $pid; wait $pid; rc=$?
[ $rc = 130 ] || fail "first Ctrl-C: exit $rc: $(cat "$work/out2")"
grep -q "tuner resume --study quadratic --storage $db2" "$work/out2" || fail "no resume hint: $(cat "$work/out2")"
grep -q "stopping: no new trial starts" "$work/out2" || fail "the first Ctrl-C was not said: $(cat "$work/out2")"
running=$("$tuner" trials --storage "$db2" --study quadratic --state running --csv | tail -n +2 | wc -l)
[ "$running" = 0 ] || fail "$running trials left RUNNING after a graceful stop"
done=$("$tuner" trials --storage "$db2" --study quadratic --csv | tail -n +2 | wc -l)
out=$("$tuner" resume --study quadratic --storage "$db2" --trials $((done + 3)) 2>&1) || fail "resume: $out"
[ "$("$tuner" trials --storage "$db2" --study quadratic --csv | tail -n +2 | wc -l)" = $((done + 3)) ] ||
  fail "resume did not run 3 more trials: $out"

# Second Ctrl-C: stop at once; nothing stays RUNNING (abandoned trials are FAIL, and re-queued).
db3="$work/q3.db"
"$tuner" sweep "$sweep" --storage "$db3" --trials 1000 >"$work/out3" 2>&1 & pid=$!
wait_for_trials "$db3" 1
kill -INT $pid; sleep 0.3; kill -INT $pid; wait $pid; rc=$?
[ $rc = 130 ] || fail "second Ctrl-C: exit $rc: $(cat "$work/out3")"
running=$("$tuner" trials --storage "$db3" --study quadratic --state running --csv | tail -n +2 | wc -l)
[ "$running" = 0 ] || fail "$running trials left RUNNING after an immediate stop"
# A sweep no executor could run is refused before its study is made, not left waiting: no local
# slots and no endpoint; a job whose trials span two executors with only the local one.
out=$("$tuner" sweep "$sweep" --storage "$work/none.db" --executors 0 2>&1); rc=$?
[ $rc = 1 ] && grep -q "no executor could run its trials: 0 local executor slots" <<<"$out" ||
  fail "no executors: rc $rc, $out"
cat >"$work/nodes.json" <<'JSON'
{"version": 1, "name": "nodes",
 "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.01}}},
 "objective": {"metric": "val_accuracy", "direction": "maximize"}, "budget": {"trials": 2},
 "job": {"kind": "engine", "ranks": 2, "nodes": 2,
         "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]},
         "data": {"dataset": "fashion-mnist", "train": 100, "validation": 50},
         "training": {"lr": "{lr}"}}}
JSON
out=$("$tuner" sweep "$work/nodes.json" --storage "$work/nodes.db" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "each trial runs on 2 executors (the job's \"nodes\"), and without an endpoint" <<<"$out" ||
  fail "nodes without an endpoint: rc $rc, $out"
[ ! -e "$work/none.db" ] && [ ! -e "$work/nodes.db" ] || fail "a refused sweep made its database"
echo "PASS"
