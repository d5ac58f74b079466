#!/usr/bin/env bash
# Regression tests for defects found by attacking `tuner` as a user would: each block
# names the defect it pins.
#   defects_cli_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/defects-cli-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A sweep of one float and one categorical parameter running `job` (a JSON argv).
write_sweep() {  # FILE NAME DIRECTION ARGV_JSON [SPACE_JSON]
  local space=${5:-'{"x": {"type": "float", "low": 0, "high": 1}, "opt": {"type": "categorical", "choices": ["adam", "sgd"]}}'}
  cat >"$1" <<JSON
{"version": 1, "name": "$2", "storage": "$work/$2.db",
 "space": {"params": $space},
 "objective": {"metric": "loss", "direction": "$3"}, "budget": {"trials": 2},
 "executors": {"local": 1},
 "job": {"kind": "command", "argv": $4}}
JSON
}
printf 'import sys\nprint("{\\"loss\\": " + sys.argv[1] + ", \\"count\\": 12345}")\n' >"$work/loss.py"
ok_job="[\"python3\", \"$work/loss.py\", \"{x}\"]"

# Regression: a float range whose width overflows passed loading and the sweep never ended.
write_sweep "$work/wide.json" wide minimize "$ok_job" '{"x": {"type": "float", "low": -1e308, "high": 1e308}}'
echo '{"params": {"x": {"type": "float", "low": -1e308, "high": 1e308}}}' >"$work/wide_space.json"
for cmd in "space check $work/wide_space.json" "sweep $work/wide.json"; do
  out=$(timeout 20 "$tuner" $cmd 2>&1); rc=$?
  [ $rc = 1 ] && grep -q "params.x.high: the range \[-1e+308, 1e+308\] is wider than the largest double" <<<"$out" ||
    fail "overflowing range, tuner $cmd: rc $rc, $out"
done

# Regression: JSON nested 100,000 levels deep crashed with SIGSEGV.
python3 - "$work/wide.json" "$work/deep.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["space"]["params"]["x"]["low"] = 0
text = json.dumps(doc)
open(sys.argv[2], "w").write(text[:-1] + ', "description": ' + "[" * 100000 + "]" * 100000 + "}")
PY
out=$("$tuner" sweep "$work/deep.json" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "deep.json: JSON nested deeper than 256 levels" <<<"$out" || fail "deep sweep file: rc $rc, $out"

# Regression: unbalanced braces in argv passed loading, then every trial failed and the sweep exited 0.
write_sweep "$work/brace.json" brace minimize '["echo", "{x"]'
out=$("$tuner" sweep "$work/brace.json" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "job.argv\[1\] \"{x\": unterminated '{'" <<<"$out" || fail "unbalanced brace: rc $rc, $out"
[ ! -e "$work/brace.db" ] || fail "a refused sweep made its database"
# Regression: a sweep whose every trial fails (the program does not exist) exited 0.
write_sweep "$work/missing.json" missing minimize '["/nonexistent/program", "{x}"]'
out=$("$tuner" sweep "$work/missing.json" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "every trial of this run failed (2); the last, trial 1: the job could not start: cannot run '/nonexistent/program'" <<<"$out" ||
  fail "every trial failed: rc $rc, $out"

# Regression: a 50 MB sweep file was accepted and stored whole in the database.
python3 - "$work/missing.json" "$work/big.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["description"] = "x" * (5 << 20)
json.dump(doc, open(sys.argv[2], "w"))
PY
out=$("$tuner" sweep "$work/big.json" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "big.json is larger than the 4 MiB a sweep, space or import file may have" <<<"$out" ||
  fail "big sweep file: rc $rc, $(head -c 300 <<<"$out")"

# A good study for the rest.
write_sweep "$work/good.json" good minimize "$ok_job"
out=$("$tuner" sweep "$work/good.json" 2>&1) || fail "good sweep: $out"
db="$work/good.db"

# Regression: a sweep that contradicts its stored study ran (the worst trial shown as the best).
write_sweep "$work/flipped.json" good maximize "$ok_job"
out=$("$tuner" sweep "$work/flipped.json" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "objective.direction is \"maximize\", but study 'good' in $db has direction \"minimize\"; to start a new study instead" <<<"$out" ||
  fail "contradicting direction: rc $rc, $out"
sed 's/"metric": "loss"/"metric": "acc"/' "$work/good.json" >"$work/metric.json"
out=$("$tuner" sweep "$work/metric.json" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "objective.metric is \"acc\", but study 'good' in $db has the metric \"loss\"" <<<"$out" ||
  fail "contradicting metric: rc $rc, $out"
"$tuner" status --storage "$db" | grep -q "^good: 2 trials.*; sampler [a-z]*; seed [0-9]*$" || fail "status shows no seed"

# Regression: the lock error advised raising the busy timeout, and nothing could set it.
python3 - "$db" "$work/locked" <<'PY' &
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").close()
time.sleep(2)
c.execute("ROLLBACK")
PY
holder=$!
for _ in $(seq 1 100); do [ -e "$work/locked" ] && break; sleep 0.05; done
out=$("$tuner" resume --study good --storage "$db" --trials 3 --busy-timeout 100 2>&1); rc=$?
[ $rc != 0 ] && grep -q "raise the busy timeout (--busy-timeout MS" <<<"$out" || fail "locked database: rc $rc, $out"
wait $holder
out=$("$tuner" resume --study good --storage "$db" --trials 3 --busy-timeout 0 2>&1); rc=$?
[ $rc = 2 ] && grep -q -- "--busy-timeout must be a number of milliseconds > 0" <<<"$out" || fail "busy timeout 0: rc $rc, $out"

# Regression: a user attribute nested 100,000 levels deep crashed `tuner trials --json`.
# Regression: an infinite intermediate value came out as null; CSV kept JSON's quotes on strings.
python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("INSERT INTO trial_user_attributes (trial_id, key, value_json) VALUES (1, 'deep', ?)",
          ("[" * 100000 + "]" * 100000,))
c.execute("UPDATE trial_intermediate_values SET intermediate_value = NULL, "
          "intermediate_value_type = 'INF_POS' WHERE trial_id = 1")
c.execute("INSERT INTO trial_intermediate_values (trial_id, step, intermediate_value, "
          "intermediate_value_type) VALUES (1, 7, NULL, 'INF_POS')")
c.commit()
PY
"$tuner" trials --storage "$db" --study good --json >"$work/trials.json" || fail "trials --json exited $?"
python3 - "$work/trials.json" <<'PY' || fail "trials --json output"
import json, math, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert rows[0]["intermediate_values"]["7"] == math.inf, rows[0]["intermediate_values"]
assert isinstance(rows[0]["user_attrs"]["deep"], str) and rows[0]["user_attrs"]["deep"].startswith("[[[")
# Regression: an integer final metric came back as a float (12345 -> 12345.0).
assert type(rows[0]["user_attrs"]["count"]) is int, rows[0]["user_attrs"]
PY
"$tuner" trials --storage "$db" --study good --csv >"$work/trials.csv" || fail "trials --csv exited $?"
python3 - "$work/trials.csv" <<'PY' || fail "trials --csv output: $(cat "$work/trials.csv")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2 and all(r["opt"] in ("adam", "sgd") for r in rows), rows
assert all(float(r["value"]) == float(r["x"]) for r in rows), rows  # exact, not rounded
PY
echo "PASS"
