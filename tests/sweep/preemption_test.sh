#!/usr/bin/env bash
# A preempted executor (SIGTERM, as Slurm sends on preemption or at the time limit) costs no retry
# and no trial of the budget: a sweep with no local executor runs its 2 trials on `tuner executor`
# processes, each stopped mid-trial in turn (4 times, past the default max_retries of 3) and
# followed by a new one (as after `sbatch --requeue`), which takes the re-runs; they resume from
# the checkpoints the program saved at $TUNER_CHECKPOINT_PATH, and the sweep ends with as many
# COMPLETE trials as its budget. MODE "shared" (the default): the executors keep their files in
# one --files-dir, as executors on a shared file system would; "apart": each executor has a
# --files-dir of its own, as on hosts that share nothing, so each stopped executor sends the
# checkpoints its trials saved to the coordinator before its BYE, and the next one fetches them;
# the third one is requeued on the first one's host (its --files-dir, with round 1's older
# checkpoints in it), and its re-runs fetch the coordinator's newer copies.
#   preemption_test.sh TUNER_BINARY WORK_DIR [MODE]
set -uo pipefail
tuner="$1"; mode="${3:-shared}"; work="$2/preemption-$mode-$$"
source "$(dirname "$0")/process_test_lib.sh"
endpoint="ipc://$work/coordinator.sock"
db="$work/p.db"

# 40 steps of 0.1 s, none beyond the step in LIMIT_FILE (so that under load neither trial runs
# ahead of the rounds of preemption); the step reached is saved at $TUNER_CHECKPOINT_PATH after
# each step (and on SIGTERM), and read at the start; the step resumed from goes to RESUMED_FILE.
cat >"$work/trial.py" <<'PY'
import json, os, signal, sys
x, resumed_file, limit_file = float(sys.argv[1]), sys.argv[2], sys.argv[3]
path = os.environ["TUNER_CHECKPOINT_PATH"]
state = json.load(open(path)) if os.path.exists(path) else {"step": 0}
print(f"resumed from step {state['step']}", file=sys.stderr, flush=True)
with open(resumed_file, "a") as f:
    f.write(f"{os.environ['TUNER_TRIAL_NUMBER']} {state['step']}\n")
def save():
    with open(path + ".tmp", "w") as f:
        json.dump(state, f)
    os.replace(path + ".tmp", path)
signal.signal(signal.SIGTERM, lambda *_: (save(), sys.exit(143)))
import time
for step in range(state["step"], 40):
    time.sleep(0.1)
    while step >= int(open(limit_file).read()):
        time.sleep(0.05)
    print(json.dumps({"step": step, "loss": (x - 1) ** 2 + 1 / (step + 1)}), flush=True)
    state["step"] = step + 1
    save()
print(json.dumps({"loss": (x - 1) ** 2}), flush=True)
PY
cat >"$work/p.json" <<JSON
{
  "version": 1,
  "name": "preempted",
  "space": {"params": {"x": {"type": "float", "low": -2.0, "high": 2.0}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "sampler": {"type": "random", "seed": 1},
  "budget": {"trials": 2},
  "job": {"kind": "command", "argv": ["python3", "$work/trial.py", "{x}", "$work/resumed.txt", "$work/limit"]},
  "executors": {"local": 0}
}
JSON
files_of() {  # executor-3 is requeued on executor-1's host
  [ "$mode" = apart ] && echo "$work/files-${1/#executor-3/executor-1}" || echo "$work/files"
}
start_executor() {  # NAME [ID]: an executor of 2 slots
  "$tuner" executor --connect "$endpoint" --slots 2 --files-dir "$(files_of "$1")" ${2:+--id "$2"} \
    --log-dir "$work/$1-logs" --heartbeat-ms 200 --timeout-ms 1000 --stop-grace-ms 5000 \
    >"$work/$1.out" 2>&1 &
  pids+=($!)
}
step_of() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["step"])' "$1" 2>/dev/null || echo 0; }

"$tuner" sweep "$work/p.json" --storage "$db" --endpoint "$endpoint" --verbose >"$work/sweep.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)

# Four executors in turn are stopped once both trials have saved 2 more steps under them; each
# is followed by a new executor process, as after `sbatch --requeue`: the first ones with their
# default ids (host and pid), the later ones all with one id, as a requeued job's
# --id $SLURM_JOB_ID would be. Four preemptions exceed the default max_retries (3): counted as
# retries, they would leave the trials failed.
a0=0; b0=0
for round in 1 2 3 4; do
  echo $((2 * round)) >"$work/limit.tmp" && mv "$work/limit.tmp" "$work/limit"
  resumed_before=$(cat "$work/resumed.txt" 2>/dev/null | wc -l)
  start_executor "executor-$round" $([ $round -ge 3 ] && echo slurm-job-7); executor_pid=$!
  ckpts="$(files_of "executor-$round")/preempted"
  for _ in $(seq 1 300); do
    a=$(step_of "$ckpts/trial-0/resume.ckpt"); b=$(step_of "$ckpts/trial-1/resume.ckpt")
    [ "$a" -ge $((a0 + 2)) ] && [ "$b" -ge $((b0 + 2)) ] && break
    sleep 0.05
  done
  [ "$a" -ge $((a0 + 2)) ] && [ "$b" -ge $((b0 + 2)) ] ||
    fail "round $round: the trials did not checkpoint 2 more steps (trial 0: $a0 -> $a, trial 1: $b0 -> $b): $(cat "$work/executor-$round.out" "$work/sweep.out")"
  a0=$a; b0=$b
  kill -TERM $executor_pid
  for _ in $(seq 1 200); do kill -0 $executor_pid 2>/dev/null || break; sleep 0.05; done
  kill -0 $executor_pid 2>/dev/null && fail "round $round: the executor did not stop on SIGTERM: $(cat "$work/executor-$round.out")"
  wait $executor_pid || fail "round $round: the stopped executor exited $?: $(cat "$work/executor-$round.out")"
  grep -q "stopped trial .* (lease .*): preempted, its checkpoint .*/trial-0/resume.ckpt is kept" \
    "$work/executor-$round.out" || fail "round $round: the executor did not say it preempted trial 0's lineage: $(cat "$work/executor-$round.out")"
  if [ "$mode" = apart ]; then
    [ "$(grep -c "sent [0-9]* file(s) of its checkpoint to the coordinator" "$work/executor-$round.out")" = 2 ] ||
      fail "round $round: the stopped executor did not send both trials' checkpoints: $(cat "$work/executor-$round.out")"
    [ $round = 1 ] || [ "$(grep -c "resumes from the coordinator's copy of its checkpoint" "$work/executor-$round.out")" = 2 ] ||
      fail "round $round: the re-runs did not fetch their checkpoints: $(cat "$work/executor-$round.out")"
    if [ $round = 3 ]; then
      [ "$(grep -c "resumes from the coordinator's copy of its checkpoint, newer than this host's" "$work/executor-3.out")" = 2 ] ||
        fail "round 3: the re-runs did not fetch the checkpoints newer than their host's: $(cat "$work/executor-3.out")"
      # Each re-run resumed from at least the step its lineage reached in round 2, not round 1's.
      tail -n +$((resumed_before + 1)) "$work/resumed.txt" | head -2 | while read -r _ step; do
        [ "$step" -ge "$(( round2_a < round2_b ? round2_a : round2_b ))" ] || echo "$step"
      done | grep -q . && fail "round 3: a re-run resumed from its host's older checkpoint: $(cat "$work/resumed.txt")"
    fi
  fi
  [ $round = 2 ] && { round2_a=$a; round2_b=$b; }
done
echo 40 >"$work/limit.tmp" && mv "$work/limit.tmp" "$work/limit"
start_executor last slurm-job-7
for _ in $(seq 1 600); do kill -0 $sweep_pid 2>/dev/null || break; sleep 0.1; done
kill -0 $sweep_pid 2>/dev/null && fail "the sweep did not finish in 60 s: $(cat "$work/sweep.out")"
wait $sweep_pid || fail "sweep exited $?: $(cat "$work/sweep.out")"

grep -q "sweep 'preempted': 2/2 done" "$work/sweep.out" || fail "no summary: $(cat "$work/sweep.out")"
grep -q "preempted: its executor slurm-job-7 on .* was stopped" "$work/sweep.out" ||
  fail "the executors of one id were not preempted: $(cat "$work/sweep.out")"
grep -q "(trial 0, attempt 0, executor .*) preempted: its executor .* on .* was stopped (checkpoint saved); re-run without a retry counted" \
  "$work/sweep.out" || fail "the coordinator did not log trial 0's preemption: $(cat "$work/sweep.out")"
[ "$(grep -c ") preempted: its executor .* was stopped (checkpoint saved); re-run without a retry counted" "$work/sweep.out")" = 8 ] ||
  fail "the coordinator did not log 8 preempted attempts: $(cat "$work/sweep.out")"
count() { "$tuner" trials --storage "$db" --study preempted --state "$1" --csv | tail -n +2 | wc -l; }
[ "$(count complete)" = 2 ] || fail "COMPLETE trials: $(count complete), not the budget's 2: $("$tuner" trials --storage "$db" --study preempted)"
[ "$(count fail)" = 8 ] || fail "FAIL trials: $(count fail): $("$tuner" trials --storage "$db" --study preempted)"
# Each attempt started where the one before it was stopped: the first ones at step 0, the
# others from their lineage's checkpoint, later each time.
python3 - "$work/resumed.txt" <<'PY' || fail "the re-runs did not resume from their checkpoints: $(cat "$work/resumed.txt")"
import sys
starts = [tuple(map(int, line.split())) for line in open(sys.argv[1])]
assert len(starts) == 10, starts
firsts = [step for number, step in starts if number in (0, 1)]
reruns = [step for number, step in starts if number > 1]
assert firsts == [0, 0] and all(step > 0 for step in reruns), starts
assert max(reruns) >= 8, starts  # the last re-runs went on from 4 rounds of at least 2 steps
PY
if [ "$mode" = apart ]; then
  # The coordinator holds each lineage's checkpoint where its re-runs fetch it, whole.
  for n in 0 1; do
    [ "$(step_of "$db.artifacts/preempted/trial-$n/resume.ckpt")" -ge 8 ] ||
      fail "the coordinator's copy of trial $n's checkpoint: $(ls -la "$db.artifacts/preempted/trial-$n" 2>&1)"
  done
  ls "$db.artifacts/preempted/trial-0" | grep -q incoming && fail "a half-received file was left: $(ls -la "$db.artifacts/preempted/trial-0")"
fi
# Stored: each preempted attempt's reason; the COMPLETE re-runs' lineages of 5 attempts, 4 of
# them preempted and not counted against max_retries.
python3 - "$db" <<'PY' || fail "the stored trials do not say what happened"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
trials = {}
for number, state in db.execute("SELECT number, state FROM trials"):
    trials[number] = {"state": state}
for number, key, value in db.execute(
        "SELECT t.number, a.key, a.value_json FROM trials t "
        "JOIN trial_system_attributes a ON a.trial_id = t.trial_id"):
    trials[number][key] = json.loads(value)
failed = [t for t in trials.values() if t["state"] == "FAIL"]
complete = [t for t in trials.values() if t["state"] == "COMPLETE"]
assert len(failed) == 8 and len(complete) == 2, trials
for t in failed:
    assert t["fail_reason"].startswith("preempted: its executor ") and t["fail_reason"].endswith(
        "was stopped (checkpoint saved); re-run without a retry counted"), t
for t in complete:
    assert len(t["retry_history"]) == 4 and t["tuner:preempted_attempts"] == 4, t
PY
echo "PASS"
