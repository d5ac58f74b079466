#!/usr/bin/env bash
# A sweep of several objectives, as a user meets it. The command-job example traded off
# two ways ("objectives": loss down, and the end point x down too, which the descent drives up to
# 3): each COMPLETE trial's values are its final loss and x, `tuner sweep` ends with the Pareto
# front, `tuner best` prints it (--json: an array) and it is exactly the non-dominated set of the
# stored trials, `tuner trials` marks it and `tuner status` gives its size and hypervolume; a
# scheduler is refused, and so is a job that does not print an objective.
#   objectives_cli_test.sh TUNER_BINARY REPO_ROOT WORK_DIR
set -uo pipefail
tuner="$1"; root="$2"; work="$3/objectives-cli-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

make_sweep() {  # make_sweep OUT OBJECTIVES_JSON [SCHEDULER_JSON]
  python3 - "$root/examples/sweeps/quadratic_command.json" "$1" "$2" "${3:-}" \
    "$root/examples/command/train_quadratic.py" <<'PY'
import json, sys
src, out, objectives, scheduler, script = sys.argv[1:]
s = json.load(open(src))
del s["objective"]
s["objectives"] = json.loads(objectives)
s["job"]["argv"][1] = script
s["scheduler"] = json.loads(scheduler) if scheduler else {"type": "none"}
s["budget"] = {"trials": 14, "max_concurrent": 1}
s["executors"] = {"local": 1}
json.dump(s, open(out, "w"))
PY
}

two='[{"metric": "loss", "direction": "minimize"}, {"metric": "x", "direction": "minimize"}]'
make_sweep "$work/mo.json" "$two"
db="$work/mo.db"
out=$("$tuner" sweep "$work/mo.json" --storage "$db" 2>&1) || fail "sweep exited $?: $out"
grep -q "14/14 done" <<<"$out" || fail "no summary in: $out"
grep -q "^Pareto front: [0-9]* of 14 COMPLETE trials" <<<"$out" || fail "no front in: $out"

"$tuner" trials --storage "$db" --study quadratic --json >"$work/trials.json" || fail "trials --json"
"$tuner" best --storage "$db" --study quadratic --json >"$work/best.json" || fail "best --json"
python3 - "$work/trials.json" "$work/best.json" <<'PY' || fail "front: $(cat "$work/best.json")"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
front = json.load(open(sys.argv[2]))
complete = [r for r in rows if r["state"] == "COMPLETE"]
assert len(complete) == 14, rows
for r in complete:
    assert r["values"] == [r["user_attrs"]["loss"], r["user_attrs"]["x"]], r
def dominates(a, b):
    return all(x <= y for x, y in zip(a, b)) and a != b
want = [r["number"] for r in complete
        if not any(dominates(o["values"], r["values"]) for o in complete)]
assert [t["number"] for t in front] == want, (front, want)
print("front", want)
PY
text=$("$tuner" best --storage "$db" --study quadratic) || fail "best: $text"
grep -q "^Pareto front of study 'quadratic' (minimize, minimize): [0-9]* of 14 COMPLETE trials" <<<"$text" ||
  fail "best says: $text"
# `tuner trials` marks the front (a column; "front" in --json), `tuner status` sizes it.
python3 - "$work/trials.json" "$work/best.json" <<'PY' || fail "trials mark: $(cat "$work/trials.json")"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
front = {t["number"] for t in json.load(open(sys.argv[2]))}
assert {r["number"] for r in rows if r["front"]} == front, rows
PY
table=$("$tuner" trials --storage "$db" --study quadratic) || fail "trials: $table"
head -1 <<<"$table" | grep -q "front  seconds" || fail "no front column: $table"
n_front=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/best.json")
[ "$(grep -c " yes " <<<"$table")" = "$n_front" ] || fail "front marks: $table"
status=$("$tuner" status --storage "$db") || fail "status: $status"
grep -q "^quadratic: 14 trials, 14 COMPLETE; 2 objectives, Pareto front $n_front trials, hypervolume [0-9]" <<<"$status" ||
  fail "status says: $status"

# Optuna's metric names: one per objective.
python3 - "$db" <<'PY' || fail "metric names"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
names = [json.loads(v) for (v,) in db.execute(
    "SELECT value_json FROM study_system_attributes WHERE key = 'study:metric_names'")]
assert names == [["loss", "x"]], names
dirs = [d for (d,) in db.execute("SELECT direction FROM study_directions ORDER BY objective")]
assert dirs == ["MINIMIZE", "MINIMIZE"], dirs
PY

# Early stopping judges one metric: refused at load, naming the field.
make_sweep "$work/s.json" "$two" '{"type": "median"}'
out=$("$tuner" sweep "$work/s.json" --storage "$work/s.db" 2>&1); rc=$?
[ $rc != 0 ] && grep -q "s.json: scheduler: early stopping judges trials by one metric, but this sweep has 2 objectives" <<<"$out" ||
  fail "scheduler: rc $rc, $out"

# An objective the job never prints: each trial FAILs, naming the metric.
make_sweep "$work/m.json" '[{"metric": "loss", "direction": "minimize"}, {"metric": "latency_ms", "direction": "minimize"}]'
out=$("$tuner" sweep "$work/m.json" --storage "$work/m.db" --trials 2 2>&1); rc=$?
[ $rc != 0 ] && grep -q "without its objective metric 'latency_ms'" <<<"$out" ||
  fail "missing objective: rc $rc, $out"
echo PASS
