#!/usr/bin/env bash
# A coordinator and two executors on hosts that are really apart: each in a network namespace of
# its own, joined by veth pairs to a bridge in a fourth namespace (the switch), with addresses on
# a private subnet; they speak TCP with CURVE keys from `tuner keygen`. One case a run:
#   partition       an executor's link is down for 30 s while it runs a trial, then up again
#                   (the coordinator is `tuner serve`, which outlives the study)
#   host-lost       an executor's host disappears for good mid-trial: every process in its
#                   namespace killed, its link down, the namespace deleted (`tuner sweep`)
#   coordinator-frozen
#                   the coordinator (`tuner sweep`) stopped with SIGSTOP for past the lease
#                   timeout while both executors run trials, then continued with SIGCONT: the
#                   time it did not run counts against no lease, and both trials keep theirs
#   coordinator-host-frozen
#                   the same with the coordinator's host cut off meanwhile, as when a whole
#                   machine stalls: nothing waits for it when it goes on, and the leases are
#                   still kept until the executors are heard again
# Each checks from the study database that every trial of the budget is COMPLETE exactly once
# (a lost attempt FAIL and re-run with the same params, none run to COMPLETE twice), that nothing
# is left RUNNING and no trial beyond the budget was sampled; and from the coordinator's log that
# the leases the executor could not renew expired and that an outcome sent for such a lease
# afterwards was refused.
#   netns_test.sh TUNER_BINARY WORK_DIR CASE      (KEEP_NETNS_TEST=1: print the logs, keep them)
set -uo pipefail
tuner="$1"; work="$2/netns-$3-$$"; case_name="$3"

[ "$(id -u)" = 0 ] || { echo "SKIP: network namespaces need root"; exit 0; }
command -v ip >/dev/null || { echo "SKIP: no ip (Debian: apt-get install iproute2)"; exit 0; }
command -v python3 >/dev/null || { echo "SKIP: no python3 (the trials' program)"; exit 0; }
case "$case_name" in
  partition | host-lost | coordinator-frozen | coordinator-host-frozen) ;;
  *) echo "netns_test.sh: unknown case '$case_name' (partition, host-lost, coordinator-frozen," \
       "coordinator-host-frozen)"; exit 2 ;;
esac

# Namespaces of earlier runs that were killed before their cleanup (their pid is gone).
for ns in $(ip netns list 2>/dev/null | sed -n 's/^\(tuner[0-9]*-[a-z]*\).*/\1/p'); do
  owner=${ns%%-*}; owner=${owner#tuner}
  kill -0 "$owner" 2>/dev/null || ip netns delete "$ns" 2>/dev/null
done
prefix="tuner$$"
sw="$prefix-sw"
namespaces=()
pids=()
rm -rf "$work"; mkdir -p "$work/keys"
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  # Whatever still runs in a namespace of this test (a trial whose executor was killed).
  for ns in "${namespaces[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns delete "$ns" 2>/dev/null
  done
  [ -n "${KEEP_NETNS_TEST:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
logs() {
  for f in "$work"/*.out; do echo "--- $(basename "$f")"; tail -n 40 "$f"; done
}
fail() {
  echo "FAIL: $*"
  logs
  exit 1
}

# The network: the switch's bridge, and a host namespace per side with eth0 on 10.231.0.0/24.
ip netns add "$sw" 2>"$work/netns.err" ||
  { echo "SKIP: cannot create a network namespace: $(cat "$work/netns.err")"; exit 0; }
namespaces+=("$sw")
ip -n "$sw" link add br0 type bridge 2>"$work/netns.err" ||
  { echo "SKIP: cannot create a bridge in a namespace: $(cat "$work/netns.err")"; exit 0; }
ip -n "$sw" link set br0 up
add_host() {  # NAME ADDRESS: namespace $prefix-NAME, its eth0 on the switch's port p-NAME
  local ns="$prefix-$1"
  ip netns add "$ns" || fail "ip netns add $ns"
  namespaces+=("$ns")
  ip link add eth0 netns "$ns" type veth peer name "p-$1" netns "$sw" 2>"$work/netns.err" ||
    { echo "SKIP: cannot create a veth pair between namespaces: $(cat "$work/netns.err")"; exit 0; }
  ip -n "$sw" link set "p-$1" master br0 up || fail "bridge port for $1"
  ip -n "$ns" addr add "$2/24" dev eth0 || fail "address for $1"
  ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up || fail "links up for $1"
}
add_host c 10.231.0.1
add_host a 10.231.0.2
add_host b 10.231.0.3
spawn() {  # HOST OUTPUT COMMAND...: COMMAND in HOST's namespace, in the background; its pid in
  # $spawned (ip netns exec becomes COMMAND)
  ip netns exec "$prefix-$1" "${@:3}" >"$2" 2>&1 &
  spawned=$!; pids+=("$spawned")
}
endpoint="tcp://10.231.0.1:5555"

# Keys: the coordinator's pair, and one per executor host whose .pub the coordinator is given.
for name in coordinator a b; do
  "$tuner" keygen --out "$work/$name" >/dev/null || fail "tuner keygen --out $work/$name"
done
cp "$work/a.pub" "$work/b.pub" "$work/keys/"

# A trial of 4 s (20 reports of 0.2 s); its final loss is (x - 1)^2.
cat >"$work/trial.py" <<'PY'
import json, sys, time
x = float(sys.argv[1])
for step in range(20):
    time.sleep(0.2)
    print(json.dumps({"step": step, "loss": (x - 1) ** 2 + 1 / (step + 1)}), flush=True)
print(json.dumps({"loss": (x - 1) ** 2}), flush=True)
PY
budget=6
cat >"$work/sweep.json" <<JSON
{
  "version": 1,
  "name": "apart",
  "space": {"params": {"x": {"type": "float", "low": -2.0, "high": 2.0}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "sampler": {"type": "random", "seed": 1},
  "budget": {"trials": $budget},
  "job": {"kind": "command", "argv": ["python3", "$work/trial.py", "{x}"]},
  "executors": {"local": 0}
}
JSON
db="$work/apart.db"

# HOST: one slot; heartbeats every 200 ms; reconnects after 2.5 s of silence (the coordinator's
# heartbeats come every second).
start_executor() {
  spawn "$1" "$work/executor-$1.out" "$tuner" executor --connect "$endpoint" --id "$1" --slots 1 \
    --key "$work/$1.key" --coordinator-key "$work/coordinator.pub" --heartbeat-ms 200 \
    --timeout-ms 2500 --log-dir "$work/logs-$1" --files-dir "$work/files-$1"
}
running_trial() {  # HOST: succeeds while a trial's program runs in HOST's namespace
  local p
  for p in $(ip netns pids "$prefix-$1" 2>/dev/null); do
    grep -q "trial.py" "/proc/$p/cmdline" 2>/dev/null && return 0
  done
  return 1
}
wait_for() {  # SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.1 s
  local seconds="$1" what="$2"; shift 2
  for _ in $(seq 1 $((seconds * 10))); do "$@" && return 0; sleep 0.1; done
  fail "$what not within $seconds s"
}
start_sweep() {  # tuner sweep in the coordinator's namespace, listening on $endpoint; $sweep_pid
  spawn c "$coordinator_log" "$tuner" sweep "$work/sweep.json" --storage "$db" --executors 0 \
    --endpoint "$endpoint" --key "$work/coordinator.key" --executor-keys "$work/keys" --verbose
  sweep_pid=$spawned
}
# The coordinator's log: tuner sweep's output, or tuner serve's.
coordinator_log="$work/coordinator.out"

# Every trial of the budget COMPLETE exactly once, from the database. Prints the trial numbers
# that are FAIL.
check_study() {
  python3 - "$db" apart "$budget" <<'PY' || fail "the study database"
import json, sqlite3, sys
db, study, budget = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = sqlite3.connect(db)
(sid,) = con.execute("SELECT study_id FROM studies WHERE study_name = ?", (study,)).fetchone()
trials = {n: (tid, state) for tid, n, state in con.execute(
    "SELECT trial_id, number, state FROM trials WHERE study_id = ?", (sid,))}
x = {tid: v for tid, v in con.execute(
    "SELECT trial_id, param_value FROM trial_params WHERE param_name = 'x' AND trial_id IN "
    "(SELECT trial_id FROM trials WHERE study_id = ?)", (sid,))}
rerun_of = {tid: json.loads(v) for tid, v in con.execute(
    "SELECT trial_id, value_json FROM trial_system_attributes WHERE key = 'failed_trial' AND "
    "trial_id IN (SELECT trial_id FROM trials WHERE study_id = ?)", (sid,))}
problems = []
def root(n):  # the first attempt of trial n's lineage (failed_trial names a trial number)
    seen = set()
    tid = trials[n][0]
    while tid in rerun_of and n not in seen:
        seen.add(n)
        n = rerun_of[tid]
        if n not in trials:
            problems.append(f"a re-run names trial {n}, which does not exist")
            break
        tid = trials[n][0]
    return n
lineages = {}
for n, (tid, state) in sorted(trials.items()):
    if state not in ("COMPLETE", "FAIL"):
        problems.append(f"trial {n} is {state}")
    lineages.setdefault(root(n), []).append(n)
if len(lineages) != budget:
    problems.append(f"{len(lineages)} trials sampled for a budget of {budget}: {lineages}")
for first, members in sorted(lineages.items()):
    complete = [n for n in members if trials[n][1] == "COMPLETE"]
    if len(complete) != 1:
        problems.append(f"trial {first}'s attempts {members}: {len(complete)} COMPLETE")
    values = {x.get(trials[n][0]) for n in members}
    if len(values) != 1:
        problems.append(f"trial {first}'s attempts {members} have other params: {values}")
if problems:
    print("; ".join(problems))
    for n, (tid, state) in sorted(trials.items()):
        print(f"  trial {n}: {state}, x {x.get(tid)}, re-run of {rerun_of.get(tid)}")
    sys.exit(1)
print(" ".join(str(n) for n, (_, state) in sorted(trials.items()) if state == "FAIL"))
PY
}

# The leases that expired, as "LEASE TRIAL EXECUTOR" lines, from the coordinator's log.
expired_leases() {
  sed -n 's/.*coordinator: lease \([0-9]*\) (trial \([0-9]*\), attempt [0-9]*, executor \([a-z]*\)) expired: .*/\1 \2 \3/p' \
    "$coordinator_log"
}
# LEASE EXECUTOR: succeeds when the coordinator has refused an outcome of the expired LEASE and
# EXECUTOR was told so.
refused() {
  grep -q "coordinator: refused the outcome of lease $1 of trial [0-9]* expired" "$coordinator_log" &&
    grep -q "the coordinator refused the outcome of lease $1: " "$work/executor-$2.out"
}
# Every lease that expired while its executor ran the trial (its log is in that executor's
# --log-dir), the executor living on: the outcome it sent later was refused. Prints those leases.
check_expired() {  # [LOST_HOST]
  local lease trial host
  while read -r lease trial host; do
    [ -e "$work/logs-$host/trial-$trial-lease-$lease.log" ] || continue
    [ "$host" = "${1:-}" ] && continue
    refused "$lease" "$host" ||
      { echo "the outcome of expired lease $lease (trial $trial, executor $host) was not refused"; return 1; }
    echo "$lease"
  done < <(expired_leases)
}

# HOST's running trial, as "LEASE TRIAL": the trial log in its --log-dir written last (a running
# trial reports every 0.2 s).
current_lease() {
  local newest
  newest=$(ls -t "$work/logs-$1" 2>/dev/null | head -n 1)
  sed -n 's/^trial-\([0-9]*\)-lease-\([0-9]*\)\.log$/\2 \1/p' <<<"$newest"
}
expired() { expired_leases | grep -q "^$1 "; }
wait_for_exit() {  # PID WHAT [STATUS]: waits up to 60 s for PID to exit with STATUS (0)
  local rc
  for _ in $(seq 1 600); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$1" 2>/dev/null && fail "$2 did not finish within 60 s"
  wait "$1"; rc=$?
  [ $rc = "${3:-0}" ] || fail "$2 exited $rc"
}
lost_host=

case "$case_name" in
partition)
  spawn c "$coordinator_log" "$tuner" serve --storage "$db" --endpoint "$endpoint" \
    --key "$work/coordinator.key" --executor-keys "$work/keys" --verbose
  serve_pid=$spawned
  listening() { grep -q "listening on" "$coordinator_log"; }
  wait_for 20 "tuner serve listening" listening
  start_executor a
  start_executor b
  spawn c "$work/submit.out" "$tuner" sweep "$work/sweep.json" --storage "$db" --submit
  submit_pid=$spawned
  wait_for 30 "a trial running on executor a" running_trial a
  sleep 1
  read -r lease trial <<<"$(current_lease a)"
  [ -n "$lease" ] || fail "no trial log of executor a's running trial"
  ip -n "$sw" link set p-a down || fail "cannot take executor a's link down"
  echo "executor a cut off at $(date +%T) for 30 s, running trial $trial (lease $lease)"
  sleep 30
  ip -n "$sw" link set p-a up || fail "cannot bring executor a's link up"
  echo "executor a back at $(date +%T)"
  wait_for_exit $submit_pid "tuner sweep --submit"
  expired "$lease" || fail "lease $lease (trial $trial) did not expire while executor a was cut off"
  # Executor a, back, sends the outcome of the trial whose lease expired: it is refused. The
  # serve outlives the study, so the outcome comes whenever the study ended.
  wait_for 30 "the refusal of the outcome of expired lease $lease" refused "$lease" a
  kill -INT $serve_pid
  wait_for_exit $serve_pid "tuner serve (after Ctrl-C)" 130
  ;;
host-lost)
  start_sweep
  start_executor a
  start_executor b
  wait_for 30 "a trial running on executor a" running_trial a
  sleep 1
  read -r lease trial <<<"$(current_lease a)"
  [ -n "$lease" ] || fail "no trial log of executor a's running trial"
  # The host goes: its processes (the executor and its trial) killed, its link down, its
  # namespace deleted.
  for p in $(ip netns pids "$prefix-a"); do kill -9 "$p"; done
  ip -n "$sw" link set p-a down
  ip netns delete "$prefix-a" || fail "cannot delete executor a's namespace"
  lost_host=a
  echo "executor a's host gone at $(date +%T), running trial $trial (lease $lease)"
  wait_for_exit $sweep_pid "tuner sweep"
  expired "$lease" || fail "lease $lease (trial $trial) of the lost host did not expire"
  ! grep -q "refused the outcome" "$coordinator_log" ||
    fail "an outcome was refused, but the host that held the lease is gone"
  ;;
coordinator-frozen | coordinator-host-frozen)
  start_sweep
  start_executor a
  start_executor b
  both_running() { running_trial a && running_trial b; }
  wait_for 30 "trials running on both executors" both_running
  sleep 1
  read -r lease_a trial_a <<<"$(current_lease a)"
  read -r lease_b trial_b <<<"$(current_lease b)"
  [ -n "$lease_a" ] && [ -n "$lease_b" ] || fail "no trial logs of the running trials"
  # The whole host: its network goes first, so that no heartbeat waits for it on its return.
  if [ "$case_name" = coordinator-host-frozen ]; then ip -n "$sw" link set p-c down; fi
  kill -STOP $sweep_pid
  echo "coordinator stopped at $(date +%T), trials $trial_a and $trial_b running"
  # Past the lease timeout (5 s), and long enough for the running trials (4 s) to finish.
  sleep 8
  kill -CONT $sweep_pid
  if [ "$case_name" = coordinator-host-frozen ]; then
    sleep 0.5
    ip -n "$sw" link set p-c up
  fi
  echo "coordinator continued at $(date +%T)"
  wait_for_exit $sweep_pid "tuner sweep"
  # The coordinator counts the time it did not run for nobody: the executors' leases outlive the
  # freeze, and each trial that ran through it has its outcome taken on its own lease.
  grep -q "this coordinator did not run for" "$coordinator_log" ||
    fail "the coordinator did not notice that it had been stopped"
  for held in "$lease_a $trial_a a" "$lease_b $trial_b b"; do
    read -r lease trial host <<<"$held"
    ! expired "$lease" || fail "lease $lease (trial $trial) expired though executor $host lived through the freeze"
    state=$("$tuner" trials --storage "$db" --study apart --csv | awk -F, -v n="$trial" '$1 == n {print $2}')
    [ "$state" = COMPLETE ] || fail "trial $trial kept its lease $lease through the freeze but is '$state'"
    echo "trial $trial: its outcome taken on lease $lease after the freeze"
  done
  ;;
esac

refusals=$(check_expired "$lost_host") || fail "$refusals"
failed=$(check_study) || fail "the study database: $failed"
[ -n "${KEEP_NETNS_TEST:-}" ] && logs && echo "work: $work"
refusals=$(xargs <<<"$refusals")
echo "trials FAIL and re-run: ${failed:-none}; stale outcomes refused, of leases: ${refusals:-none}"
echo "PASS"
