#!/usr/bin/env bash
# A sweep whose executors Slurm starts ("executors": {"slurm": ...}), on a one-node Slurm brought
# up here: munged, slurmctld and slurmd with their own sockets, ports and state in a fresh
# directory. Checks that every trial completes on the Slurm executors (tuner status showing
# their jobs meanwhile), that an executor idle beside a busy one is cancelled after idle_grace,
# that nothing is left in the queue afterwards, also after Ctrl-C and under tuner serve, that a
# job requeued mid-trial (as on preemption) resumes its trials from their checkpoints, and that
# a job Slurm refuses (a partition that does not exist) or whose program fails at once stops the
# sweep quickly with Slurm's reason.
#   slurm_test.sh TUNER_BINARY WORK_DIR     (KEEP_SLURM_TEST=1: print the outputs, keep the folder)
set -uo pipefail
tuner="$1"; work="$2/slurm-$$"

for program in munged slurmctld slurmd sbatch squeue scancel scontrol sinfo python3; do
  command -v "$program" >/dev/null || { echo "SKIP: no $program (Debian: apt-get install slurm-wlm munge)"; exit 0; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: slurmd must run as root to start jobs"; exit 0; }

rm -rf "$work"; mkdir -p "$work"/{munge,state,spool,log}
pids=()
cleanup() {
  # Every job of this test's cluster cancelled and gone before its daemons stop: a job step whose
  # slurmd has gone waits for it for ever.
  if [ -n "${SLURM_CONF:-}" ]; then
    ids=$(timeout 5 squeue --noheader --format=%i 2>/dev/null)
    [ -n "$ids" ] && timeout 5 scancel $ids 2>/dev/null
    for _ in $(seq 1 100); do
      [ -z "$(timeout 5 squeue --noheader 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  # The processes this test started, by their pids (a sweep still running has had its jobs
  # cancelled above); then the directory.
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  [ -f "$work/munge/munged.pid" ] && kill "$(cat "$work/munge/munged.pid")" 2>/dev/null
  # A job step that outlived its slurmd is this cluster's when it has this test's SLURM_CONF.
  for dir in /proc/[0-9]*; do
    [ "$(cat "$dir/comm" 2>/dev/null)" = slurmstepd ] &&
      tr '\0' '\n' <"$dir/environ" 2>/dev/null | grep -qx "SLURM_CONF=$work/slurm.conf" &&
      kill -9 "${dir#/proc/}" 2>/dev/null
  done
  [ -n "${KEEP_SLURM_TEST:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- squeue"; squeue 2>&1
  echo "--- slurmctld.log"; tail -n 20 "$work/log/slurmctld.log" 2>/dev/null
  echo "--- slurmd.log"; tail -n 20 "$work/log/slurmd.log" 2>/dev/null
  exit 1
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }

# munge: a fresh key, its own socket.
head -c 1024 /dev/urandom >"$work/munge/munge.key"; chmod 600 "$work/munge/munge.key"
chmod 755 "$work/munge"
munged --force --socket="$work/munge/munge.socket" --key-file="$work/munge/munge.key" \
  --log-file="$work/munge/munged.log" --pid-file="$work/munge/munged.pid" \
  --seed-file="$work/munge/munged.seed" || fail "munged did not start: $(cat "$work/munge/munged.log")"

host=$(hostname -s)
export SLURM_CONF="$work/slurm.conf"
cat >"$SLURM_CONF" <<CONF
ClusterName=tunertest
SlurmctldHost=$host
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
KillWait=2
MinJobAge=300
NodeName=$host CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
slurmctld -D -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/log/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  [ "$(sinfo --noheader --format=%t 2>/dev/null)" = idle ] && break
  sleep 0.1
done
[ "$(sinfo --noheader --format=%t 2>/dev/null)" = idle ] || fail "the node is not idle: $(sinfo 2>&1)"

cat >"$work/trial.py" <<'PY'
import json, sys, time
x = float(sys.argv[1])
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.5)
print(json.dumps({"loss": (x - 1) ** 2}), flush=True)
PY
make_sweep() {  # NAME SLURM_SECTION [TRIAL_SECONDS]
  cat >"$work/$1.json" <<JSON
{
  "name": "$1",
  "space": {"params": {"x": {"type": "float", "low": -2.0, "high": 2.0}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "sampler": {"type": "random", "seed": 1},
  "budget": {"trials": 6},
  "job": {"kind": "command", "argv": ["python3", "$work/trial.py", "{x}", "${3:-0.5}"]},
  "executors": {"slurm": $2}
}
JSON
}

# Six trials on at most two Slurm executors.
make_sweep ok '{"max_executors": 2, "slots": 1, "time": "10:00", "tuner": "'"$tuner"'"}'
"$tuner" sweep "$work/ok.json" >"$work/ok.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
# While it runs, tuner status shows its jobs.
status_seen=
while kill -0 $sweep_pid 2>/dev/null; do
  status=$("$tuner" status --storage "$work/ok.db" 2>/dev/null)
  grep -q "^  slurm jobs (tuner-ok-[a-z0-9]*): [0-9]* [A-Z]*" <<<"$status" && status_seen="$status"
  [ -n "$status_seen" ] && break
  sleep 0.1
done
for _ in $(seq 1 1000); do kill -0 $sweep_pid 2>/dev/null || break; sleep 0.1; done
kill -0 $sweep_pid 2>/dev/null && fail "the sweep still runs after 100 s: $(cat "$work/ok.out")"
wait $sweep_pid; rc=$?
out=$(cat "$work/ok.out")
[ $rc = 0 ] || fail "the sweep exited $rc: $out"
[ -n "$status_seen" ] || fail "tuner status never showed the sweep's Slurm jobs"
[ -n "${KEEP_SLURM_TEST:-}" ] && echo "$status_seen" && echo "$out" && echo "squeue after:" && squeue
grep -q "slurm: submitted job" <<<"$out" || fail "no job submitted: $out"
grep -q "sweep 'ok': 6/6 done (6 complete" <<<"$out" || fail "not all trials complete: $out"
trials=$("$tuner" trials --storage "$work/ok.db" --study ok --state complete --csv 2>&1) ||
  fail "tuner trials: $trials"
[ "$(tail -n +2 <<<"$trials" | wc -l)" = 6 ] || fail "not 6 COMPLETE trials: $trials"
jobs=$(grep -c "slurm: submitted job" <<<"$out")
[ "$jobs" -ge 1 ] && [ "$jobs" -le 2 ] || fail "$jobs jobs submitted for at most 2 executors: $out"
# Nothing left queued or running: the jobs cancelled as the sweep ended are gone once Slurm has
# killed their executors.
for _ in $(seq 1 100); do [ -z "$(squeue --noheader)" ] && break; sleep 0.1; done
[ -z "$(squeue --noheader)" ] || fail "jobs left after the sweep: $(squeue)"
grep -q "slurm: cancelled job" <<<"$out" || fail "the sweep did not cancel its jobs: $out"
[ ! -e "$work/ok.db.slurm/ok/executor.key" ] || fail "the executors' secret key was left behind"
# The executor really ran under Slurm: its job's output is where the launcher put it.
ls "$work/ok.db.slurm/ok/"slurm-*.out >/dev/null 2>&1 || fail "no job output in $work/ok.db.slurm/ok"

# Two trials on two executors: the first to start runs long, the other is short. The short one's
# executor, idle while the long trial runs on the other, is cancelled after idle_grace; the busy
# one runs its trial to the end.
cat >"$work/first_long.py" <<'PY'
import json, os, sys, time
try:
    os.mkdir(sys.argv[2])
    time.sleep(12)
except FileExistsError:
    time.sleep(0.2)
print(json.dumps({"loss": float(sys.argv[1]) ** 2}), flush=True)
PY
cat >"$work/idle.json" <<JSON
{
  "name": "idle",
  "space": {"params": {"x": {"type": "float", "low": -2.0, "high": 2.0}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "sampler": {"type": "random", "seed": 1},
  "budget": {"trials": 2},
  "job": {"kind": "command", "argv": ["python3", "$work/first_long.py", "{x}", "$work/idle.first"]},
  "executors": {"slurm": {"max_executors": 2, "idle_grace": 1, "tuner": "$tuner"}}
}
JSON
out=$(timeout 60 "$tuner" sweep "$work/idle.json" 2>&1); rc=$?
[ -n "${KEEP_SLURM_TEST:-}" ] && echo "$out"
[ $rc = 0 ] || fail "the sweep with an idle executor exited $rc: $out"
grep -q "sweep 'idle': 2/2 done (2 complete" <<<"$out" || fail "not both trials complete: $out"
idle_job=$(sed -n 's/.*slurm: cancelled job \([0-9]*\) (not needed now).*/\1/p' <<<"$out")
[ -n "$idle_job" ] || fail "no idle executor's job cancelled while the other ran its trial: $out"
grep -q "slurm: job $idle_job started" <<<"$out" || fail "job $idle_job was cancelled unstarted: $out"
for _ in $(seq 1 100); do [ -z "$(squeue --noheader)" ] && break; sleep 0.1; done
[ -z "$(squeue --noheader)" ] || fail "jobs left after the sweep with an idle executor: $(squeue)"

# Ctrl-C twice (stop the running trials now) while trials run on Slurm executors: the sweep
# cancels its jobs on the way out.
make_sweep stopped '{"max_executors": 2, "tuner": "'"$tuner"'"}' 60
"$tuner" sweep "$work/stopped.json" >"$work/stopped.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
for _ in $(seq 1 300); do
  [ "$("$tuner" trials --storage "$work/stopped.db" --study stopped --state running --csv 2>/dev/null |
       tail -n +2 | wc -l)" -ge 1 ] && break
  sleep 0.1
done
kill -INT $sweep_pid; sleep 0.5; kill -INT $sweep_pid
for _ in $(seq 1 300); do kill -0 $sweep_pid 2>/dev/null || break; sleep 0.1; done
kill -0 $sweep_pid 2>/dev/null && fail "the sweep still runs 30 s after Ctrl-C twice"
wait $sweep_pid; rc=$?
out=$(cat "$work/stopped.out")
[ $rc = 130 ] || fail "the stopped sweep exited $rc, not 130: $out"
grep -q "slurm: cancelled job" <<<"$out" || fail "the stopped sweep did not cancel its jobs: $out"
for _ in $(seq 1 100); do [ -z "$(squeue --noheader)" ] && break; sleep 0.1; done
[ -z "$(squeue --noheader)" ] || fail "jobs left after Ctrl-C: $(squeue)"

# A job preempted mid-trial and requeued (`scontrol requeue`, what PreemptMode=REQUEUE does):
# Slurm sends its executor SIGTERM; the executor stops both trials, which save their step, sends
# their checkpoints and says BYE. The job runs again under its id, and its executor resumes the
# trials from their checkpoints, without a retry counted and without a new job submitted.
cat >"$work/ckpt_trial.py" <<'PY'
import json, os, signal, sys, time
x, out = float(sys.argv[1]), sys.argv[2]
path = os.environ["TUNER_CHECKPOINT_PATH"]
number = os.environ["TUNER_TRIAL_NUMBER"]
state = json.load(open(path)) if os.path.exists(path) else {"step": 0}
with open(f"{out}/resumed.txt", "a") as f:
    f.write(f"{number} {state['step']}\n")
def save():
    with open(path + ".tmp", "w") as f:
        json.dump(state, f)
    os.replace(path + ".tmp", path)
signal.signal(signal.SIGTERM, lambda *_: (save(), sys.exit(143)))
for step in range(state["step"], 50):
    time.sleep(0.1)
    print(json.dumps({"step": step, "loss": x * x + 1 / (step + 1)}), flush=True)
    state["step"] = step + 1
    save()
    with open(f"{out}/step-{number}", "w") as f:
        f.write(str(step + 1))
print(json.dumps({"loss": x * x}), flush=True)
PY
mkdir -p "$work/requeue"
cat >"$work/requeued.json" <<JSON
{
  "name": "requeued",
  "space": {"params": {"x": {"type": "float", "low": -2.0, "high": 2.0}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "sampler": {"type": "random", "seed": 1},
  "budget": {"trials": 2},
  "job": {"kind": "command", "argv": ["python3", "$work/ckpt_trial.py", "{x}", "$work/requeue"]},
  "executors": {"slurm": {"max_executors": 1, "slots": 2, "tuner": "$tuner"}}
}
JSON
"$tuner" sweep "$work/requeued.json" >"$work/requeued.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
# Requeued once both trials have saved step 3 and the sweep has seen the job run.
for _ in $(seq 1 600); do
  job=$(sed -n 's/.*slurm: job \([0-9]*\) started.*/\1/p' "$work/requeued.out" | head -1)
  [ -n "$job" ] && [ "$(cat "$work/requeue/step-0" 2>/dev/null || echo 0)" -ge 3 ] &&
    [ "$(cat "$work/requeue/step-1" 2>/dev/null || echo 0)" -ge 3 ] && break
  sleep 0.1
done
[ -n "$job" ] && [ "$(cat "$work/requeue/step-1" 2>/dev/null || echo 0)" -ge 3 ] ||
  fail "the trials did not reach step 3 on a Slurm executor: $(cat "$work/requeued.out")"
scontrol requeue "$job" || fail "scontrol requeue $job failed"
# Slurm holds a requeued job back for a while (reason BeginTime): once the sweep has seen it
# pending again, it may start at once.
for _ in $(seq 1 300); do
  grep -q "slurm: job $job requeued by Slurm" "$work/requeued.out" && break
  sleep 0.1
done
grep -q "slurm: job $job requeued by Slurm" "$work/requeued.out" ||
  fail "the requeue of job $job was not said: $(cat "$work/requeued.out")"
scontrol update JobId="$job" StartTime=now || fail "scontrol update JobId=$job StartTime=now failed"
for _ in $(seq 1 1200); do kill -0 $sweep_pid 2>/dev/null || break; sleep 0.1; done
kill -0 $sweep_pid 2>/dev/null && fail "the requeued sweep still runs after 120 s: $(cat "$work/requeued.out")"
wait $sweep_pid; rc=$?
out=$(cat "$work/requeued.out")
[ -n "${KEEP_SLURM_TEST:-}" ] && echo "$out" && cat "$work/requeue/resumed.txt"
[ $rc = 0 ] || fail "the requeued sweep exited $rc: $out"
grep -q "sweep 'requeued': 2/2 done (2 complete" <<<"$out" || fail "not both trials complete: $out"
[ "$(grep -c "slurm: submitted job" <<<"$out")" = 1 ] || fail "a job was submitted besides the requeued one: $out"
[ "$(grep -c "FAIL: preempted: its executor slurm-$job on .* was stopped (checkpoint saved); re-run without a retry counted" <<<"$out")" = 2 ] ||
  fail "the coordinator did not take both trials' attempts as preempted: $out"
# Each re-run started from the step its attempt had saved, at least 3.
python3 - "$work/requeue/resumed.txt" <<'PY' || fail "the re-runs did not resume from their checkpoints: $(cat "$work/requeue/resumed.txt")"
import sys
starts = [tuple(map(int, line.split())) for line in open(sys.argv[1])]
assert len(starts) == 4, starts
assert [s for n, s in starts if n in (0, 1)] == [0, 0], starts
assert all(s >= 3 for n, s in starts if n > 1), starts
PY
for _ in $(seq 1 100); do [ -z "$(squeue --noheader)" ] && break; sleep 0.1; done
[ -z "$(squeue --noheader)" ] || fail "jobs left after the requeued sweep: $(squeue)"

# tuner serve starts a submitted study's Slurm executors and cancels them when it is done.
"$tuner" keygen --out "$work/coordinator" >/dev/null || fail "keygen"
mkdir -p "$work/executor-keys"
"$tuner" keygen --out "$work/executor-keys/box" >/dev/null || fail "keygen"
"$tuner" serve --storage "$work/serve.db" --endpoint "tcp://0.0.0.0:$(free_port)" \
  --key "$work/coordinator.key" --executor-keys "$work/executor-keys" >"$work/serve.out" 2>&1 &
serve_pid=$!; pids+=($serve_pid)
for _ in $(seq 1 100); do grep -qs "listening on" "$work/serve.out" && break; sleep 0.05; done
make_sweep served '{"max_executors": 2, "tuner": "'"$tuner"'"}'
out=$(timeout 60 "$tuner" sweep "$work/served.json" --storage "$work/serve.db" --submit 2>&1); rc=$?
[ $rc = 0 ] || fail "the submitted sweep exited $rc: $out; serve: $(cat "$work/serve.out")"
grep -q "sweep 'served': 6/6 done (6 complete" <<<"$out" || fail "submitted: $out"
grep -q "serve: study 'served': slurm: submitted job" "$work/serve.out" ||
  fail "the serve submitted no job: $(cat "$work/serve.out")"
for _ in $(seq 1 100); do [ -z "$(squeue --noheader)" ] && break; sleep 0.1; done
[ -z "$(squeue --noheader)" ] || fail "jobs left after the served study: $(squeue)"
make_sweep servednopart '{"partition": "nosuch", "tuner": "'"$tuner"'"}'
out=$(timeout 60 "$tuner" sweep "$work/servednopart.json" --storage "$work/serve.db" --submit 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "sweep 'servednopart' stopped: executors.slurm: Slurm refused" <<<"$out" &&
  grep -qi "invalid partition" <<<"$out" || fail "a served study on a missing partition: rc $rc, $out"
kill -INT $serve_pid; wait $serve_pid
[ -n "${KEEP_SLURM_TEST:-}" ] && cat "$work/serve.out"

# A partition that does not exist: sbatch refuses, and the sweep says so at once.
make_sweep nopart '{"partition": "nosuch", "tuner": "'"$tuner"'"}'
out=$(timeout 30 "$tuner" sweep "$work/nopart.json" 2>&1); rc=$?
[ -n "${KEEP_SLURM_TEST:-}" ] && echo "$out"
[ $rc != 0 ] && [ $rc != 124 ] || fail "a sweep on a missing partition exited $rc: $out"
grep -q "executors.slurm: Slurm refused the executor job of sweep 'nopart'" <<<"$out" &&
  grep -qi "invalid partition" <<<"$out" || fail "no Slurm reason for the missing partition: $out"

# An executor that cannot start on the node: its job fails at once, with its output.
make_sweep badbin '{"tuner": "/nonexistent/tuner"}'
out=$(timeout 60 "$tuner" sweep "$work/badbin.json" 2>&1); rc=$?
[ -n "${KEEP_SLURM_TEST:-}" ] && echo "$out"
[ $rc != 0 ] && [ $rc != 124 ] || fail "a sweep whose executors cannot start exited $rc: $out"
grep -q "executors.slurm: the executor job [0-9]* of sweep 'badbin' ended" <<<"$out" &&
  grep -q "/nonexistent/tuner" <<<"$out" || fail "the failed job is not explained: $out"
for _ in $(seq 1 100); do [ -z "$(squeue --noheader)" ] && break; sleep 0.1; done
[ -z "$(squeue --noheader)" ] || fail "jobs left after the failed sweeps: $(squeue)"

echo PASS
