#!/usr/bin/env bash
# Population-based training end to end with a command job: a population of 4 trains in segments
# of 3 steps up to 12; each segment is a trial that starts from its parent's checkpoint (the
# state continues: the script records the chain of trials its state went through), lineage
# attributes are stored, a bottom member exploits a top one (always when synchronous), and a
# coordinator killed with SIGKILL mid-population is resumed with `tuner resume` and finishes every
# member. MODE is "asynchronous" (the default), "synchronous", or "pb2" (asynchronous, exploring
# by PB2's GP bandit), or "apart" (synchronous, each executor with files of its own as on hosts
# that share no file system: a segment that continues on the other executor starts from the
# checkpoint its parent's executor sent to the coordinator). A segment re-run after the kill
# resumes from its own checkpoint, or, where that is at the segment's end already, is paused there
# without running its program.
#   pbt_cli_test.sh TUNER_BINARY WORK_DIR [MODE]
set -uo pipefail
tuner="$1"; work="$2/pbt-$$"
mode="${3:-asynchronous}"
synchronous=$([ "$mode" = synchronous ] || [ "$mode" = apart ] && echo true || echo false)
type=$([ "$mode" = pb2 ] && echo pb2 || echo pbt)
source "$(dirname "$0")/process_test_lib.sh"

# The toy objective: x <- (1 - lr) x + lr^2 from x = 10, whose fixed point is lr: a large lr
# gets down fast, a small one gets lower, so the best schedule is large early and small late.
# The state (step, x, and the trials it went through) lives in TUNER_CHECKPOINT_PATH, saved
# before each report; what a segment started from is kept in its folder as start.json.
cat >"$work/toy.py" <<'PY'
import json, os, sys, time
lr = float(sys.argv[1])
path = os.environ["TUNER_CHECKPOINT_PATH"]
state = {"step": 0, "x": 10.0, "trail": []}
if os.path.exists(path):
    with open(path) as f:
        state = json.load(f)
with open(os.path.join(os.environ["TUNER_ARTIFACTS_DIR"], "start.json"), "w") as f:
    json.dump(dict(state, pause_at=int(os.environ["TUNER_PAUSE_AT_STEP"]), checkpoint=path), f)
state["trail"].append(int(os.environ["TUNER_TRIAL_NUMBER"]))
while state["step"] < 12:
    time.sleep(0.05)
    state["x"] = (1 - lr) * state["x"] + lr * lr
    state["step"] += 1
    with open(path + ".tmp", "w") as f:
        json.dump(state, f)
    os.replace(path + ".tmp", path)
    print(json.dumps({"step": state["step"], "loss": state["x"]}), flush=True)
PY
cat >"$work/pbt.json" <<JSON
{
  "version": 1,
  "name": "pbt",
  "space": {"params": {"lr": {"type": "float", "low": 0.01, "high": 0.9, "log": true}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "sampler": {"type": "random", "seed": 4},
  "scheduler": {"type": "$type", "population_size": 4, "perturbation_interval": 3,
                "max_steps": 12, "seed": 2, "synchronous": $synchronous},
  "job": {"kind": "command", "argv": ["python3", "$work/toy.py", "{lr}"]},
  "executors": {"local": 0}
}
JSON
db="$work/pbt.db"
endpoint="ipc://$work/coordinator.sock"
count() {  # trials in state $1
  "$tuner" trials --storage "$db" --study pbt --state "$1" --csv 2>/dev/null | tail -n +2 | wc -l
}

# A sweep file that states a trial budget is refused: the population is the budget.
sed 's/"executors"/"budget": {"trials": 8}, "executors"/' "$work/pbt.json" >"$work/bad.json"
out=$("$tuner" sweep "$work/bad.json" --storage "$work/bad.db" 2>&1) && fail "budget.trials taken"
grep -q "budget.trials" <<<"$out" || fail "the refusal names no option: $out"

"$tuner" sweep "$work/pbt.json" --storage "$db" --endpoint "$endpoint" --verbose \
  >"$work/sweep.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
start_executor() {
  local files=(--keep-files)
  [ "$mode" = apart ] && files=(--files-dir "$work/files-$1")
  "$tuner" executor --connect "$endpoint" --id "$1" --slots 2 "${files[@]}" --heartbeat-ms 200 \
    --timeout-ms 1000 >"$work/executor-$1.out" 2>&1 &
  pids+=($!)
}
start_executor a
# Apart, executor b joins only after a's host is gone (below).
[ "$mode" = apart ] || start_executor b

# Kill the coordinator once the population is past its first segments.
for _ in $(seq 1 400); do
  [ "$(count complete)" -ge 6 ] && break
  sleep 0.05
done
[ "$(count complete)" -ge 6 ] || fail "no segments finished: $(cat "$work/sweep.out")"
kill -9 $sweep_pid; wait $sweep_pid 2>/dev/null
# Apart, executor a's host is gone too: the population goes on on b, from the checkpoints a
# sent to the coordinator.
if [ "$mode" = apart ]; then
  kill -9 "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null
  start_executor b
fi
killed_at=$(count complete)
[ "$killed_at" -lt 16 ] || fail "the population had finished before the coordinator was killed"

out=$(timeout 90 "$tuner" resume --study pbt --storage "$db" --endpoint "$endpoint" \
      --executors 0 --verbose 2>&1); rc=$?
[ $rc = 0 ] || fail "resume exited $rc: $out"
[ "$(count running)" = 0 ] || fail "trials left RUNNING: $out"
[ "$(count waiting)" = 0 ] || fail "segments left WAITING: $out"

"$tuner" trials --storage "$db" --study pbt --json >"$work/trials.jsonl" || fail "trials --json"
python3 - "$work/trials.jsonl" "$db.artifacts/pbt" "$synchronous" "$mode" "$work" <<'PY' || fail "the population: $out"
import json, os, sys
trials = [json.loads(line) for line in open(sys.argv[1])]
folder = sys.argv[2]
by_number = {t["number"]: t for t in trials}
complete = {}
exploits = crossings = resumed_own = paused_done = 0
def start_of(t):  # what its program started from; None when its program did not run
    path = os.path.join(folder, "trial-%d" % t["number"], "start.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)
def runs_of(t):  # the trials that ran its member's segment: t and its re-runs
    key = (t["pbt"]["member"], t["pbt"]["segment"])
    return {u["number"] for u in trials if (u["pbt"]["member"], u["pbt"]["segment"]) == key}
for t in trials:
    lineage = t.get("pbt")
    assert lineage, "trial %d has no lineage" % t["number"]
    if t["state"] != "COMPLETE":
        continue
    key = (lineage["member"], lineage["segment"])
    assert key not in complete, "member %d segment %d ran twice" % key
    complete[key] = t
    steps = sorted(int(s) for s in t["intermediate_values"])
    seg = lineage["segment"]
    # Its values are at global steps, and it ended at its segment's end with the value there.
    assert steps[-1] == 3 * (seg + 1), (t["number"], steps)
    assert t["values"][0] == t["intermediate_values"][str(steps[-1])], t["number"]
    start = start_of(t)
    ran_before = runs_of(t) - {t["number"]}
    if start is None:
        # A re-run whose own checkpoint was at its segment's end already (an earlier run was
        # paused there and its RESULT lost) trains no more: paused there, nothing past it.
        assert ran_before and steps == [3 * (seg + 1)], (t["number"], steps, ran_before)
        paused_done += 1
        continue
    checkpoint = start.pop("checkpoint")
    # The program is told where its segment ends (it runs on here, to be paused by tuner).
    assert start.pop("pause_at") == 3 * (seg + 1), (t["number"], start)
    # A re-run resumes from its own checkpoint where an earlier run of its segment left one.
    resumed = bool(start["trail"]) and start["trail"][-1] in ran_before
    resumed_own += resumed
    if seg == 0:
        assert lineage["parent"] is None and (start["trail"] == [] or resumed), (t["number"], start)
        continue
    parent = by_number[lineage["parent"]]
    if sys.argv[4] == "apart" and start_of(parent) is not None:
        # Each executor keeps its files in its own folder: a segment whose parent ran on the
        # other one found the parent's checkpoint only through the coordinator.
        own, theirs = (c.startswith(os.path.join(sys.argv[5], "files-a"))
                       for c in (checkpoint, start_of(parent)["checkpoint"]))
        crossings += own != theirs
    # The state it started from is its parent's checkpoint (the last trial it went through ran
    # the parent's segment, from the parent's segment end on), or its own segment's.
    assert resumed or start["trail"][-1] in runs_of(parent), (t["number"], parent["number"], start)
    assert start["step"] >= 3 * seg, (t["number"], start)
    # Its values go on from there (those reported while no coordinator was up are lost).
    assert steps[0] > start["step"], (t["number"], steps, start)
    if parent["pbt"]["member"] != lineage["member"]:
        exploits += 1
        # Exploited: the parent's params, explored (lr perturbed, resampled or chosen by PB2's
        # bandit, in bounds).
        assert 0.01 <= t["params"]["lr"] <= 0.9, t["number"]
    else:
        assert t["params"]["lr"] == parent["params"]["lr"], t["number"]
assert sorted(complete) == [(m, s) for m in range(4) for s in range(4)], sorted(complete)
# Synchronously the bottom member of every boundary exploits; asynchronously a member is ranked
# among those that reached its boundary before it, so whether one exploits depends on the order
# in which they arrive.
if sys.argv[3] == "true":
    assert exploits >= 1, "no member exploited another"
if sys.argv[4] == "apart":
    assert crossings >= 1, "no segment continued on the other executor"
print("exploits", exploits, "crossings", crossings, "re-runs from their own checkpoint",
      resumed_own, "re-runs paused at their end without training", paused_done)
PY

[ "$synchronous" = false ] || { grep -q "exploits trial" "$work/sweep.out" ||
  grep -q "exploits trial" <<<"$out"; } || fail "no exploit was logged"
best=$("$tuner" best --storage "$db" --study pbt) || fail "best: $best"
grep -q "schedule:" <<<"$best" || fail "best shows no schedule: $best"
[ "$(grep -c "    segment " <<<"$best")" = 4 ] || fail "the best member's schedule: $best"
last=$("$tuner" trials --storage "$db" --study pbt --csv | awk -F, 'NR > 1 { n = $1 } END { print n }')
lineage=$("$tuner" trials --storage "$db" --study pbt --lineage "$last") || fail "lineage: $lineage"
head -1 <<<"$lineage" | grep -q "^segment 0  trial " || fail "lineage: $lineage"
"$tuner" trials --storage "$db" --study pbt | head -1 | grep -q "member  segment  parent" ||
  fail "no lineage columns: $("$tuner" trials --storage "$db" --study pbt | head -3)"
echo "PASS (killed with $killed_at of 16 segments complete; resumed to 16)"
