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

python3 - "$db" "$(dirname "$0")" <<'PY' || fail "decisions"
import sys
sys.path.insert(0, sys.argv[-1])
import mo_asha_check
trials, steps, stopped, _ = mo_asha_check.read_study(sys.argv[1], ["loss", "x"])
states = [s for _, s in trials.values()]
assert "PRUNED" in states and "COMPLETE" in states, states
rungs = [1, 3, 9, 27]  # min_resource 1, reduction_factor 3, no max_resource

decided = mo_asha_check.check_rung_decisions(trials, steps, stopped, rungs, 3,
                                              lambda v: v)
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
