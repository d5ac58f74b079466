#!/usr/bin/env bash
# Early stopping with two objectives, end to end: examples/sweeps/quadratic_mo_asha.json (a
# command job printing its loss and end point x at every step; both minimized) under MO-ASHA.
# Some trials are stopped at a rung and the others complete; each stopped trial records the
# step it was stopped at, and every decision is the one a brute-force non-dominated sort of the
# stored values makes (the trials run one at a time, so a trial's competitors at a rung are the
# trials before it). The report marks the stopped trials with their step.
#   mo_asha_cli_test.sh TUNER_BINARY REPO_ROOT WORK_DIR
set -uo pipefail
tuner="$1"; root="$2"; work="$3/mo-asha-cli-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 - "$root/examples/sweeps/quadratic_mo_asha.json" "$work/mo.json" \
  "$root/examples/command/train_quadratic.py" <<'PY'
import json, sys
src, out, script = sys.argv[1:]
s = json.load(open(src))
s["job"]["argv"][1] = script
s["budget"] = {"trials": 14, "max_concurrent": 1}
json.dump(s, open(out, "w"))
PY
db="$work/mo.db"
out=$("$tuner" sweep "$work/mo.json" --storage "$db" 2>&1) || fail "sweep exited $?: $out"
grep -q "14/14 done" <<<"$out" || fail "no summary in: $out"

python3 - "$db" <<'PY' || fail "decisions"
import json, math, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
trials = {n: (tid, state) for tid, n, state in db.execute(
    "SELECT trial_id, number, state FROM trials")}
stopped = {tid: json.loads(v) for tid, v in db.execute(
    "SELECT trial_id, value_json FROM trial_system_attributes WHERE key = 'tuner:stopped_at_step'")}
steps = {}  # trial_id -> step -> [loss, x]
for tid, step, name, value in db.execute(
        "SELECT trial_id, step, name, value FROM tuner_trial_step_metrics"):
    v = steps.setdefault(tid, {}).setdefault(step, [math.nan, math.nan])
    if name in ("loss", "x"):
        v[["loss", "x"].index(name)] = value
states = [s for _, s in trials.values()]
assert "PRUNED" in states and "COMPLETE" in states, states
rungs = [1, 3, 9, 27]  # min_resource 1, reduction_factor 3, no max_resource

def at_rung(tid, r):
    later = sorted(s for s in steps.get(tid, {}) if s >= r)
    return steps[tid][later[0]] if later else None

def kept(points, k):  # NSGA-II selection: whole fronts, then crowding; ties to the lower index
    n, m = len(points), 2
    finite = [i for i in range(n) if all(math.isfinite(v) for v in points[i])]
    left, chosen = finite, []
    while left and len(chosen) < k:
        front = [a for a in left if not any(
            all(x <= y for x, y in zip(points[b], points[a])) and points[b] != points[a]
            for b in left)]
        if len(chosen) + len(front) <= k:
            chosen += front
        else:
            d = {i: 0.0 for i in front}
            for j in range(m):
                order = sorted(front, key=lambda i: (points[i][j], i))
                lo, hi = points[order[0]][j], points[order[-1]][j]
                if lo == hi:
                    continue
                for p, i in enumerate(order):
                    before = points[order[p - 1]][j] if p > 0 else -math.inf
                    after = points[order[p + 1]][j] if p + 1 < len(order) else math.inf
                    d[i] += 0.0 if before == after else (after - before) / (hi - lo)
            chosen += sorted(front, key=lambda i: (-d[i], i))[:k - len(chosen)]
        left = [i for i in left if i not in front]
    chosen += [i for i in range(n) if i not in finite][:max(0, k - len(chosen))]
    return set(chosen)

decided = 0
for n in sorted(trials):
    tid, state = trials[n]
    last = stopped.get(tid) if state == "PRUNED" else max(steps[tid])
    assert last is not None, (n, state)
    for r in rungs:
        if r > last:
            break
        own = at_rung(tid, r)
        competitors = [at_rung(trials[o][0], r) for o in sorted(trials) if o < n]
        points = [c for c in competitors if c is not None] + [own]
        stays = len(points) - 1 in kept(points, max(len(points) // 3, 1))
        should_stop = state == "PRUNED" and r == last
        assert stays != should_stop, (n, state, r, points)
        decided += 1
    if state == "PRUNED":
        assert last in rungs, (n, last)  # a report at every step: stopped at the rung itself
print("decisions checked:", decided)
PY

# The report marks each stopped trial with its step.
"$tuner" report --study quadratic_mo_asha --storage "$db" --out "$work/r.html" >/dev/null 2>&1 ||
  fail "report"
pruned=$(python3 -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute(
    "SELECT count(*) FROM trials WHERE state = ?", ("PRUNED",)).fetchone()[0])' "$db")
marks=$(grep -o 'class="stopped"' "$work/r.html" | wc -l)
[ "$marks" = "$pruned" ] || fail "the report marks $marks of $pruned stopped trials"
echo PASS
