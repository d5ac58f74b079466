#!/usr/bin/env bash
# The coordinator killed with SIGKILL while its executors run trials: `tuner resume` brings it
# back on the same storage, the executors reconnect and hand back the trials they kept running,
# no finished trial is lost or run twice, and max_concurrent holds across the restart (the new
# coordinator counts the trials still running on executors before it leases more).
#   coordinator_restart_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/coordinator-restart-$$"
source "$(dirname "$0")/process_test_lib.sh"

# A trial of about 1.2 s that, when it ends, notes that it ran; and notes when it started and
# ended (for the most trials running at once).
write_slow_trial "$work/slow.py" 8 0.15
cat >"$work/timed.py" <<PY
import subprocess, sys, time
with open("$work/spans.txt", "a") as spans:
    spans.write("%.6f 1\\n" % time.time())
code = subprocess.call([sys.executable, "$work/slow.py"] + sys.argv[1:])
with open("$work/spans.txt", "a") as spans:
    spans.write("%.6f -1\\n" % time.time())
sys.exit(code)
PY
cat >"$work/sweep.json" <<JSON
{
  "version": 1,
  "name": "restart",
  "space": {"params": {"x": {"type": "float", "low": -2.0, "high": 2.0}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "sampler": {"type": "random", "seed": 1},
  "budget": {"trials": 10, "max_concurrent": 3},
  "job": {"kind": "command", "argv": ["python3", "$work/timed.py", "{x}", "$work/runs.txt"]},
  "executors": {"local": 0}
}
JSON
db="$work/restart.db"
endpoint="ipc://$work/coordinator.sock"
count() {  # trials in state $1
  "$tuner" trials --storage "$db" --study restart --state "$1" --csv 2>/dev/null | tail -n +2 | wc -l
}

"$tuner" sweep "$work/sweep.json" --storage "$db" --endpoint "$endpoint" --verbose \
  >"$work/sweep.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
for name in a b; do
  "$tuner" executor --connect "$endpoint" --id "$name" --slots 2 --heartbeat-ms 200 \
    --timeout-ms 1000 >"$work/executor-$name.out" 2>&1 &
  pids+=($!)
done

# Kill the coordinator once the second wave of trials is running.
for _ in $(seq 1 300); do
  [ "$(count complete)" -ge 3 ] && [ "$(count running)" -ge 2 ] && break
  sleep 0.05
done
[ "$(count complete)" -ge 3 ] || fail "no trials finished: $(cat "$work/sweep.out")"
kill -9 $sweep_pid; wait $sweep_pid 2>/dev/null
running=$(count running)
[ "$running" -ge 1 ] || fail "nothing was running when the coordinator died"

out=$(timeout 60 "$tuner" resume --study restart --storage "$db" --endpoint "$endpoint" \
      --executors 0 --verbose 2>&1); rc=$?
[ $rc = 0 ] || fail "resume exited $rc: $out"
taken=$(grep -c "taken back from an earlier coordinator" <<<"$out")
[ "$taken" -ge 1 ] || fail "no trial was taken back ($running were running): $out"

[ "$(count running)" = 0 ] || fail "trials left RUNNING: $out"
[ "$(count fail)" = 0 ] || fail "trials failed: $("$tuner" trials --storage "$db" --study restart)"
[ "$(count complete)" = 10 ] || fail "$(count complete) of 10 trials complete: $out"
# Every trial that ran to its end is stored, once: numbers 0..9, each run exactly once.
"$tuner" trials --storage "$db" --study restart --csv | tail -n +2 | cut -d, -f1 | sort -n >"$work/stored"
sort -n "$work/runs.txt" >"$work/ran"
diff "$work/stored" "$work/ran" >/dev/null ||
  fail "stored trials $(tr '\n' ' ' <"$work/stored") but ran $(tr '\n' ' ' <"$work/ran")"
[ "$(tr '\n' ' ' <"$work/stored")" = "0 1 2 3 4 5 6 7 8 9 " ] || fail "numbering: $(cat "$work/stored")"
most=$(sort -n "$work/spans.txt" | awk '{ n += $2; if (n > most) most = n } END { print most }')
[ "$most" -le 3 ] || fail "$most trials ran at once, max_concurrent is 3: $out"
echo "PASS ($running trials were running when the coordinator was killed; $taken taken back;" \
  "at most $most at once)"
