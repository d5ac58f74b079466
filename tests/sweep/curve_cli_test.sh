#!/usr/bin/env bash
# A study served over TCP with CURVE to separate `tuner executor` processes, as on two hosts:
# keys from `tuner keygen`, a coordinator that accepts only the executors it was given, an
# executor with an unknown key that gets nothing, and the refusal of plain TCP that other hosts
# could reach.
#   curve_cli_test.sh TUNER_BINARY REPO_ROOT WORK_DIR
set -uo pipefail
tuner="$1"; root="$2"; work="$3/curve-cli-$$"
sweep="$root/examples/sweeps/quadratic_command.json"
source "$(dirname "$0")/process_test_lib.sh"
mkdir -p "$work/keys" "$work/logs-a" "$work/logs-b" "$work/logs-x"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Keys: one pair per side; the coordinator gets the executors' .pub files in a folder.
for name in coordinator host-a host-b stranger; do
  "$tuner" keygen --out "$work/$name" >/dev/null || fail "keygen $name"
done
[ "$(stat -c %a "$work/host-a.key")" = 600 ] || fail "the secret key file is not mode 0600"
out=$("$tuner" keygen --out "$work/host-a" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "exists (give --force" <<<"$out" || fail "keygen overwrote a key: rc $rc, $out"
cp "$work/host-a.pub" "$work/host-b.pub" "$work/keys/"

# Plain TCP that other hosts can reach is refused; half a key configuration is a usage error.
out=$("$tuner" sweep "$sweep" --storage "$work/x.db" --executors 0 --endpoint "tcp://0.0.0.0:$(free_port)" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "can be reached from other hosts" <<<"$out" || fail "open TCP accepted: rc $rc, $out"
out=$("$tuner" sweep "$sweep" --storage "$work/x.db" --key "$work/coordinator.key" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "go together" <<<"$out" || fail "--key alone: rc $rc, $out"
out=$("$tuner" executor --connect tcp://127.0.0.1:1 --key "$work/host-a.pub" --coordinator-key "$work/coordinator.pub" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "no secret-key line" <<<"$out" || fail "a .pub as --key: rc $rc, $out"

# The sweep: no local executor, only the two authorized ones (and a stranger knocking).
port=$(free_port)
endpoint="tcp://127.0.0.1:$port"
"$tuner" sweep "$sweep" --storage "$work/q.db" --trials 6 --executors 0 --endpoint "$endpoint" \
  --key "$work/coordinator.key" --executor-keys "$work/keys" --verbose >"$work/sweep.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
start_executor() {  # NAME KEY LOG_DIR
  "$tuner" executor --connect "$endpoint" --id "$1" --key "$2" \
    --coordinator-key "$work/coordinator.pub" --log-dir "$3" --heartbeat-ms 200 --timeout-ms 1000 \
    >"$work/$1.out" 2>&1 &
  pids+=($!)
}
start_executor stranger "$work/stranger.key" "$work/logs-x"
start_executor host-a "$work/host-a.key" "$work/logs-a"
start_executor host-b "$work/host-b.key" "$work/logs-b"

for _ in $(seq 1 600); do kill -0 $sweep_pid 2>/dev/null || break; sleep 0.1; done
kill -0 $sweep_pid 2>/dev/null && fail "the sweep did not finish in 60 s: $(cat "$work/sweep.out")"
wait $sweep_pid; rc=$?
[ $rc = 0 ] || fail "sweep exited $rc: $(cat "$work/sweep.out")"
grep -q "sweep 'quadratic': 6/6 done" "$work/sweep.out" || fail "no summary: $(cat "$work/sweep.out")"
grep -qF "key $(sed -n 's/^public-key = "\(.*\)"$/\1/p' "$work/stranger.pub") is not authorized" "$work/sweep.out" ||
  fail "the stranger's key was not refused: $(cat "$work/sweep.out")"
a=$(ls "$work/logs-a" | wc -l); b=$(ls "$work/logs-b" | wc -l); x=$(ls "$work/logs-x" | wc -l)
[ $((a + b)) = 6 ] && [ "$a" -ge 1 ] && [ "$b" -ge 1 ] && [ "$x" = 0 ] ||
  fail "trials per executor: host-a $a, host-b $b, stranger $x"
echo "PASS"
