#!/usr/bin/env bash
# A sweep with constraints, as a user meets it. The command-job example with
# "constraints": [{"metric": "x", "max": 2.5}] (its descent ends near x = 3, so trials that get
# there are infeasible): the trials' constraint values are stored from the job's final metrics,
# `tuner best` and `tuner status` give the best feasible trial, `tuner trials` marks the
# infeasible ones, and a sweep whose constraint metric the job never prints fails its trials
# saying so.
#   constraints_cli_test.sh TUNER_BINARY REPO_ROOT WORK_DIR
set -uo pipefail
tuner="$1"; root="$2"; work="$3/constraints-cli-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The example with absolute paths, one trial at a time (the same trials on every run), and the
# constraint.
make_sweep() {  # make_sweep OUT CONSTRAINTS_JSON
  python3 - "$root/examples/sweeps/quadratic_command.json" "$1" "$2" \
    "$root/examples/command/train_quadratic.py" <<'PY'
import json, sys
src, out, constraints, script = sys.argv[1:]
s = json.load(open(src))
s["constraints"] = json.loads(constraints)
s["job"]["argv"][1] = script
s["scheduler"] = {"type": "none"}
s["budget"] = {"trials": 12, "max_concurrent": 1}
s["executors"] = {"local": 1}
json.dump(s, open(out, "w"))
PY
}

make_sweep "$work/c.json" '[{"metric": "x", "max": 2.5}]'
db="$work/c.db"
out=$("$tuner" sweep "$work/c.json" --storage "$db" 2>&1) || fail "sweep exited $?: $out"
grep -q "12/12 done" <<<"$out" || fail "no summary in: $out"
# Each trial's line names its sampler (TPE's 5 startup trials are random), and marks it when it
# is infeasible.
grep -Eq "^\[quadratic\] trial [0-9]+ COMPLETE: loss [0-9.e-]+ \((random|tpe); infeasible\); " <<<"$out" ||
  fail "no infeasible trial line: $out"
grep -Eq "^\[quadratic\] trial [0-9]+ COMPLETE: loss [0-9.e-]+ \((random|tpe)\); " <<<"$out" ||
  fail "no feasible trial line: $out"
grep -q "^\[quadratic\] trial 4 COMPLETE: .*(random" <<<"$out" || fail "trial 4 is not random: $out"
grep -q "^\[quadratic\] trial 5 COMPLETE: .*(tpe" <<<"$out" || fail "trial 5 is not TPE's: $out"

"$tuner" trials --storage "$db" --study quadratic --json >"$work/trials.json" || fail "trials --json"
best=$("$tuner" best --storage "$db" --study quadratic --json) || fail "best --json"
python3 - "$work/trials.json" "$best" <<'PY' || fail "stored constraints: $(cat "$work/trials.json")"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
best = json.loads(sys.argv[2])
complete = [r for r in rows if r["state"] == "COMPLETE"]
assert len(complete) == 12, rows
for r in complete:
    x = r["user_attrs"]["x"]
    assert r["constraints"] == [x - 2.5], r          # metric - max
    assert r["feasible"] == (x <= 2.5), r
    assert r["sampler"] == ("random" if r["number"] < 5 else "tpe"), r
feasible = [r for r in complete if r["feasible"]]
infeasible = [r for r in complete if not r["feasible"]]
assert feasible and infeasible, "want both kinds: %d feasible" % len(feasible)
want = min(feasible, key=lambda r: r["values"][0])
assert best["number"] == want["number"], (best, want)
# The best value overall is an infeasible trial's: that is what the constraint is for.
assert min(r["values"][0] for r in complete) < want["values"][0]
print("feasible", len(feasible), "infeasible", len(infeasible), "best", want["number"])
PY
n_infeasible=$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l).get("feasible") is False))' "$work/trials.json")

out=$("$tuner" best --storage "$db" --study quadratic) || fail "best: $out"
grep -q "^  constraints: -[0-9.e-]* (feasible; $n_infeasible of 12 COMPLETE trials are not)" <<<"$out" ||
  fail "best does not show the constraints: $out"
out=$("$tuner" status --storage "$db") || fail "status: $out"
grep -q "^quadratic: 12 trials.*, $n_infeasible COMPLETE infeasible" <<<"$out" || fail "status says: $out"
csv=$("$tuner" trials --storage "$db" --study quadratic --csv) || fail "trials --csv"
head -1 <<<"$csv" | grep -q "^number,state,value,feasible,constraints,seconds,sampler," || fail "csv header: $csv"
[ "$(grep -c ",COMPLETE,[^,]*,no," <<<"$csv")" = "$n_infeasible" ] || fail "csv marks: $csv"
# Each trial names its sampler: TPE's 5 startup trials are random.
[ "$(tail -n +2 <<<"$csv" | cut -d, -f7 | sort | uniq -c | tr -s ' ' | tr '\n' ';')" = " 5 random; 7 tpe;" ] ||
  fail "sampler column: $csv"
table=$("$tuner" trials --storage "$db" --study quadratic) || fail "trials"
head -1 <<<"$table" | grep -q "feasible  constraints" || fail "table header: $table"

# A constraint on a metric the job does not print: each trial FAILs, naming the metric.
make_sweep "$work/m.json" '[{"metric": "latency_ms", "max": 2}]'
out=$("$tuner" sweep "$work/m.json" --storage "$work/m.db" --trials 2 2>&1); rc=$?
[ $rc != 0 ] && grep -q "error: sweep 'quadratic': every trial of this run failed (2); the last, trial 1: RESULT has no value for the constraint metric 'latency_ms' (latency_ms <= 2)" <<<"$out" ||
  fail "sweep m: rc $rc, $out"
python3 - "$work/m.db" <<'PY' || fail "missing constraint metric"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
states = [s for (s,) in db.execute("SELECT state FROM trials")]
assert states == ["FAIL", "FAIL"], states
reasons = [v for (v,) in db.execute(
    "SELECT value_json FROM trial_system_attributes WHERE key = 'fail_reason'")]
want = "\"RESULT has no value for the constraint metric 'latency_ms' (latency_ms <= 2)\""
assert reasons == [want, want], reasons
PY
out=$("$tuner" best --storage "$work/m.db" --study quadratic 2>&1)
grep -q "has no COMPLETE trial yet" <<<"$out" || fail "best on no complete trial: $out"

# No feasible trial at all: x <= -100 is out of reach.
make_sweep "$work/n.json" '[{"metric": "x", "max": -100}]'
out=$("$tuner" sweep "$work/n.json" --storage "$work/n.db" --trials 3 2>&1) || fail "sweep n: $out"
grep -q "no feasible trial yet" <<<"$out" || fail "the sweep's summary: $out"
out=$("$tuner" best --storage "$work/n.db" --study quadratic 2>&1); rc=$?
[ $rc != 0 ] && grep -q "has no feasible trial yet: each of its 3 COMPLETE trials violates a constraint" <<<"$out" ||
  fail "best with no feasible trial: rc $rc, $out"
echo PASS
