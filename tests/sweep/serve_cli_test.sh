#!/usr/bin/env bash
# tuner serve with several studies on one executor: submit (tuner sweep --submit), pause,
# unpause and stop from the command line; one serve per storage; Ctrl-C stops it.
#   serve_cli_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/serve-cli-$$"
source "$(dirname "$0")/process_test_lib.sh"
write_slow_trial "$work/slow.py" 3 0.1
make_sweep() {  # NAME TRIALS
  cat >"$work/$1.json" <<JSON
{
  "version": 1,
  "name": "$1",
  "space": {"params": {"x": {"type": "float", "low": -2.0, "high": 2.0}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "sampler": {"type": "random", "seed": 1},
  "budget": {"trials": $2},
  "job": {"kind": "command", "argv": ["python3", "$work/slow.py", "{x}"]}
}
JSON
}
db="$work/serve.db"
endpoint="ipc://$work/serve.sock"
count() {  # STUDY [STATES]: its trials (in those states)
  "$tuner" trials --storage "$db" --study "$1" ${2:+--state "$2"} --csv 2>/dev/null | tail -n +2 | wc -l
}

out=$("$tuner" pause --study a --storage "$db" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "no tuner serve runs on" <<<"$out" || fail "pause without a serve: rc $rc, $out"

"$tuner" serve --storage "$db" --endpoint "$endpoint" >"$work/serve.out" 2>&1 &
serve_pid=$!; pids+=($serve_pid)
for _ in $(seq 1 100); do grep -q "listening on" "$work/serve.out" && break; sleep 0.05; done
out=$("$tuner" serve --storage "$db" --endpoint "ipc://$work/other.sock" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "a tuner serve already runs on $db (pid $serve_pid" <<<"$out" ||
  fail "a second serve on one storage: rc $rc, $out"
"$tuner" executor --connect "$endpoint" --slots 2 --heartbeat-ms 200 >"$work/executor.out" 2>&1 &
pids+=($!)

# Two studies at once on the one executor.
make_sweep a 6; make_sweep b 6
"$tuner" sweep "$work/a.json" --storage "$db" --submit >"$work/a.out" 2>&1 & a_pid=$!; pids+=($a_pid)
"$tuner" sweep "$work/b.json" --storage "$db" --submit >"$work/b.out" 2>&1 & b_pid=$!; pids+=($b_pid)
for _ in $(seq 1 200); do [ "$(count b)" -ge 1 ] && break; sleep 0.05; done
out=$("$tuner" pause --study b --storage "$db") || fail "pause: $out"
grep -q "study 'b': paused" <<<"$out" || fail "pause says: $out"
"$tuner" status --storage "$db" | grep -q "^b: .*; on tuner serve: paused" ||
  fail "status: $("$tuner" status --storage "$db")"
paused_at=$(count b)
sleep 1.5
[ "$(count b)" = "$paused_at" ] || fail "study b started trials while paused ($paused_at -> $(count b))"
"$tuner" unpause --study b --storage "$db" >/dev/null || fail "unpause"
wait $a_pid || fail "submit a exited $?: $(cat "$work/a.out")"
wait $b_pid || fail "submit b exited $?: $(cat "$work/b.out")"
grep -q "sweep 'a': 6/6 done" "$work/a.out" || fail "a: $(cat "$work/a.out")"
grep -q "sweep 'b': 6/6 done" "$work/b.out" || fail "b: $(cat "$work/b.out")"
[ "$(count a complete)" = 6 ] && [ "$(count b complete)" = 6 ] || fail "not all complete"

# A study submitted again with a changed space says the change, as tuner sweep does.
sed -e 's/"high": 2.0/"high": 3.0/' -e 's/"trials": 6/"trials": 7/' "$work/a.json" >"$work/a2.json"
"$tuner" sweep "$work/a2.json" --storage "$db" --submit >"$work/a2.out" 2>&1 ||
  fail "submit a again exited $?: $(cat "$work/a2.out")"
grep -q "^\[a\] space changed: x " "$work/a2.out" || fail "no space change line: $(cat "$work/a2.out")"
[ "$(count a complete)" = 7 ] || fail "a did not run its 7th trial"

# A study whose trials all fail alike is stopped by the serve, and the submitter says why.
make_sweep broken 30
sed -i 's|"argv": \["python3", "[^"]*"|"argv": ["python3", "-c", "import sys; sys.exit(3)"|' "$work/broken.json"
out=$("$tuner" sweep "$work/broken.json" --storage "$db" --submit 2>&1); rc=$?
[ $rc = 1 ] && grep -q "sweep 'broken' stopped: the first 3 trials failed the same way" <<<"$out" ||
  fail "a failing study on tuner serve: rc $rc, $out"
[ "$(count broken)" -lt 10 ] || fail "the failing study ran $(count broken) trials"

# Stop: a long study ends early, with nothing left running.
make_sweep c 1000
"$tuner" sweep "$work/c.json" --storage "$db" --submit >"$work/c.out" 2>&1 & c_pid=$!; pids+=($c_pid)
for _ in $(seq 1 200); do [ "$(count c complete)" -ge 2 ] && break; sleep 0.05; done
out=$("$tuner" stop --study c --storage "$db") || fail "stop: $out"
wait $c_pid || fail "submit c exited $?: $(cat "$work/c.out")"
[ "$(count c running)" = 0 ] || fail "c left RUNNING trials"
[ "$(count c)" -lt 1000 ] || fail "c was not stopped"
out=$("$tuner" stop --study nope --storage "$db" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "no study 'nope'" <<<"$out" || fail "stop of an unknown study: rc $rc, $out"

# Ctrl-C stops the serve once its running trials end; its active study goes on in the next serve.
make_sweep d 1000
"$tuner" sweep "$work/d.json" --storage "$db" --submit >"$work/d.out" 2>&1 & d_pid=$!; pids+=($d_pid)
for _ in $(seq 1 200); do [ "$(count d complete)" -ge 2 ] && break; sleep 0.05; done
kill -INT $serve_pid; wait $serve_pid; rc=$?
[ $rc = 130 ] || fail "serve exited $rc after Ctrl-C: $(cat "$work/serve.out")"
grep -q "study 'a' done" "$work/serve.out" || fail "serve log: $(cat "$work/serve.out")"
[ "$(count d running)" = 0 ] || fail "the stopped serve left trials of d RUNNING"
"$tuner" status --storage "$db" | grep -q "^d: .*; on tuner serve: active" || fail "d is not active"
before=$(count d)
"$tuner" serve --storage "$db" --endpoint "$endpoint" >"$work/serve2.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do [ "$(count d)" -gt "$before" ] && break; sleep 0.05; done
[ "$(count d)" -gt "$before" ] || fail "the next serve did not take d up: $(cat "$work/serve2.out")"
"$tuner" stop --study d --storage "$db" >/dev/null || fail "stop d"
wait $d_pid || fail "submit d exited $?: $(cat "$work/d.out")"
echo "PASS"
