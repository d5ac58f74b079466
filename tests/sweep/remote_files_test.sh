#!/usr/bin/env bash
# Trial files travel to the coordinator's host: a sweep with no local executor and two `tuner
# executor` processes (as on other hosts, each with its own --log-dir and --files-dir) ends with
# every trial's log in the sweep's <db>.logs and every trial's folder (TensorBoard events, the
# program's result.json) in <db>.artifacts/<study>/trial-N, where `tuner logs` reads them; with
# --max-files-mb 0 the files stay on the executor, and both sides say where.
#   remote_files_test.sh TUNER_BINARY REPO_ROOT WORK_DIR
set -uo pipefail
tuner="$1"; root="$2"; work="$3/remote-files-$$"
sweep="$root/examples/sweeps/quadratic_command.json"
source "$(dirname "$0")/process_test_lib.sh"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_executor() {  # NAME ENDPOINT [FLAGS...]
  local name="$1" endpoint="$2"; shift 2
  "$tuner" executor --connect "$endpoint" --id "$name" --log-dir "$work/$name-logs" \
    --files-dir "$work/$name-files" --heartbeat-ms 200 --timeout-ms 1000 "$@" \
    >"$work/$name.out" 2>&1 &
  pids+=($!)
}
run_sweep() {  # DB TRIALS [--verbose]
  "$tuner" sweep "$sweep" --storage "$1" --trials "$2" --executors 0 --endpoint "$endpoint" \
    ${3:-} >"$1.out" 2>&1 &
  local sweep_pid=$!; pids+=($sweep_pid)
  for _ in $(seq 1 600); do kill -0 $sweep_pid 2>/dev/null || break; sleep 0.1; done
  kill -0 $sweep_pid 2>/dev/null && fail "the sweep did not finish in 60 s: $(cat "$1.out")"
  wait $sweep_pid || fail "sweep exited $?: $(cat "$1.out")"
}

# Two executors share the trials; each trial's files go to the coordinator's side.
endpoint="tcp://127.0.0.1:$(free_port)"
start_executor host-a "$endpoint"
start_executor host-b "$endpoint"
run_sweep "$work/q.db" 4 --verbose
grep -q "sweep 'quadratic': 4/4 done" "$work/q.db.out" || fail "no summary: $(cat "$work/q.db.out")"
a=$(ls "$work/host-a-logs" | wc -l); b=$(ls "$work/host-b-logs" | wc -l)
[ $((a + b)) = 4 ] || fail "trials run by the executors: host-a $a, host-b $b"
for n in 0 1 2 3; do
  log=$(ls "$work/q.db.logs"/trial-$n-lease-*.log 2>/dev/null)
  [ -n "$log" ] || fail "trial $n: no log in $work/q.db.logs: $(ls "$work/q.db.logs" 2>&1)"
  cmp -s "$log" "$work"/host-?-logs/"$(basename "$log")" ||
    fail "trial $n: the coordinator's copy of its log differs from the executor's"
  folder="$work/q.db.artifacts/quadratic/trial-$n"
  ls "$folder"/events.out.tfevents.* >/dev/null 2>&1 ||
    fail "trial $n: no TensorBoard events in $folder: $(ls -a "$folder" 2>&1)"
  ls -a "$folder" | grep -q "^\.tuner-incoming" && fail "trial $n: a half-received file is left"
done
# Each COMPLETE trial's program wrote its file (a pruned one was stopped before its end).
complete=$("$tuner" trials --study quadratic --storage "$work/q.db" --state complete --csv |
  tail -n +2 | cut -d, -f1)
[ -n "$complete" ] || fail "no COMPLETE trial: $("$tuner" trials --study quadratic --storage "$work/q.db")"
for n in $complete; do
  folder="$work/q.db.artifacts/quadratic/trial-$n"
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))["loss"]' "$folder/result.json" ||
    fail "trial $n: no result.json from the program in $folder: $(ls -a "$folder" 2>&1)"
  ls "$work"/host-?-files/quadratic/trial-$n/result.json >/dev/null 2>&1 ||
    fail "trial $n: the executor did not keep its own copy"
done
out=$("$tuner" logs --study quadratic --storage "$work/q.db" --trial 1 2>&1) ||
  fail "tuner logs: $out"
grep -q "==> trial 1, lease" <<<"$out" && grep -q "trial 1: params from TUNER_PARAMS" <<<"$out" ||
  fail "tuner logs did not print trial 1's log: $out"
grep -q "is not kept\|dropped the files" "$work/q.db.out" && fail "files refused: $(cat "$work/q.db.out")"

# A limit of 0: nothing is sent; the trial's log (kept on the executor) and the sweep's output
# (without --verbose too) name the files left and where.
kill "${pids[0]}" "${pids[1]}" 2>/dev/null
endpoint="tcp://127.0.0.1:$(free_port)"
start_executor host-c "$endpoint" --max-files-mb 0
run_sweep "$work/z.db" 1
grep -q "warning: lease .* file(s) of .* stay on host .*past the limit of 0 bytes per trial" \
  "$work/z.db.out" ||
  fail "the coordinator did not say which files stayed: $(cat "$work/z.db.out")"
grep -q "$work/host-c-files/quadratic/trial-0/result.json" "$work/z.db.out" ||
  fail "the coordinator's output does not name the file left: $(cat "$work/z.db.out")"
grep -q "^\[tuner\] .* stay on host .*trial-0/result.json" "$work"/host-c-logs/trial-0-lease-*.log ||
  fail "the trial's log does not name the files left: $(cat "$work"/host-c-logs/*)"
[ -z "$(ls "$work/z.db.logs" 2>/dev/null)" ] || fail "a log was sent past the limit"
echo "PASS"
