#!/usr/bin/env bash
# The study database locked by another process past the busy timeout, under a running tuner
# sweep and under tuner serve (several studies): the failure is said at once with its cause,
# tried again for a bounded time, then the command stops with exit 1 and a true account; nothing
# committed is lost, and the study goes on once the lock is gone.
#   storage_lock_cli_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/storage-lock-cli-$$"
source "$(dirname "$0")/process_test_lib.sh"
write_slow_trial "$work/slow.py" 2 0.1

make_sweep() {  # NAME STORAGE TRIALS
  cat >"$work/$1.json" <<JSON
{"version": 1, "name": "$1", "storage": "$2",
 "space": {"params": {"x": {"type": "float", "low": -2, "high": 2}}},
 "objective": {"metric": "loss", "direction": "minimize"}, "budget": {"trials": $3},
 "sampler": {"type": "random", "seed": 1}, "executors": {"local": 2},
 "job": {"kind": "command", "argv": ["python3", "$work/slow.py", "{x}"]}}
JSON
}
count() {  # DB STUDY STATE: its trials in that state, read with Python's sqlite3
  python3 - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
print(db.execute("select count(*) from trials t join studies s on s.study_id = t.study_id "
                 "where s.study_name = ? and t.state = ?", (sys.argv[2], sys.argv[3])).fetchone()[0])
PY
}
wait_for() {  # DB STUDY N: until the study has N COMPLETE trials (10 s at most)
  for _ in $(seq 1 200); do [ "$(count "$1" "$2" COMPLETE 2>/dev/null || echo 0)" -ge "$3" ] && return 0; sleep 0.05; done
  return 1
}
# Holds the database's write lock, as another program's long transaction would, until killed.
hold_lock() {  # DB
  python3 - "$1" >"$work/lock.out" 2>&1 <<'PY' &
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(600)
PY
  lock_pid=$!; pids+=($lock_pid)
  for _ in $(seq 1 100); do grep -q held "$work/lock.out" && return 0; sleep 0.05; done
  fail "could not take the lock: $(cat "$work/lock.out")"
}

# Regression: a lock held past the busy timeout inside the sweep's batch of writes was retried
# without bound and without a word (the sweep froze, its trials' outcomes resent for ever).
db="$work/sweep.db"
make_sweep locked "$db" 1000
"$tuner" sweep "$work/locked.json" --busy-timeout 200 >"$work/sweep.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
wait_for "$db" locked 2 || fail "no trial finished: $(cat "$work/sweep.out")"
hold_lock "$db"
timeout 60 tail --pid=$sweep_pid -f /dev/null || fail "the sweep went on under a held lock: $(cat "$work/sweep.out")"
wait $sweep_pid; rc=$?
out=$(cat "$work/sweep.out")
[ $rc = 1 ] || fail "sweep under a held lock: rc $rc, $out"
grep -q "warning: cannot store the study's outcomes and new trials: .*$db.*another process holds the database lock longer than the busy timeout" <<<"$out" ||
  fail "the lock was not said at once with its cause: $out"
grep -q "sweep 'locked' stopped: its storage refuses writes: the study's writes failed [0-9]* times in a row" <<<"$out" ||
  fail "no stop reason: $out"
grep -q "go on with: tuner resume --study locked --storage $db" <<<"$out" || fail "no way to go on: $out"
kill $lock_pid; wait $lock_pid 2>/dev/null
# The summary is true: the trials it counts as complete are those the file holds.
said=$(sed -n "s/^sweep 'locked': [0-9]*\/1000 done (\([0-9]*\) complete.*/\1/p" <<<"$out")
stored=$(count "$db" locked COMPLETE)
[ -n "$said" ] && [ "$said" = "$stored" ] || fail "the summary says $said complete, the file holds $stored: $out"
out=$("$tuner" resume --study locked --storage "$db" --trials $((stored + 3)) 2>&1); rc=$?
[ $rc = 0 ] || fail "resume once the lock is gone: rc $rc, $out"
[ "$(count "$db" locked COMPLETE)" = $((stored + 3)) ] || fail "resume did not go on: $out"
[ "$(count "$db" locked RUNNING)" = 0 ] || fail "resume left RUNNING trials: $out"

# Regression: tuner serve (several studies) did not track its write failures: under a held lock it
# retried for ever. It now stops as the sweep does, and the next serve takes its studies up.
db="$work/serve.db"
endpoint="ipc://$work/serve.sock"
"$tuner" serve --storage "$db" --endpoint "$endpoint" --executors 2 --busy-timeout 200 \
  >"$work/serve.out" 2>&1 &
serve_pid=$!; pids+=($serve_pid)
for _ in $(seq 1 100); do grep -q "listening on" "$work/serve.out" && break; sleep 0.05; done
for s in a b; do
  make_sweep $s "$db" 1000
  "$tuner" sweep "$work/$s.json" --submit >"$work/$s.out" 2>&1 &
  pids+=($!)
done
wait_for "$db" a 2 && wait_for "$db" b 2 || fail "the studies did not run: $(cat "$work/serve.out")"
hold_lock "$db"
timeout 60 tail --pid=$serve_pid -f /dev/null || fail "the serve went on under a held lock: $(cat "$work/serve.out")"
wait $serve_pid; rc=$?
out=$(cat "$work/serve.out")
[ $rc = 1 ] || fail "serve under a held lock: rc $rc, $out"
grep -q "serve: cannot store the study's outcomes and new trials: .*another process holds the database lock longer than the busy timeout" <<<"$out" ||
  fail "the serve did not say the lock at once: $out"
grep -q "error: tuner serve stopped: its storage refuses writes: .*; everything committed before is kept.*start tuner serve again on $db" <<<"$out" ||
  fail "no clear error from the serve: $out"
grep -q "serve: study 'a' stopped (the storage failed): [0-9]* complete" <<<"$out" || fail "no account of study a: $out"
kill $lock_pid; wait $lock_pid 2>/dev/null
before=$(count "$db" b COMPLETE)
"$tuner" serve --storage "$db" --endpoint "$endpoint" --executors 2 >"$work/serve2.out" 2>&1 &
pids+=($!)
wait_for "$db" b $((before + 2)) || fail "the next serve did not take the studies up: $(cat "$work/serve2.out")"
echo PASS
