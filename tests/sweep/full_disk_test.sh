#!/usr/bin/env bash
# A sweep whose study database is on a file system that fills up while it runs (a small tmpfs,
# mounted in a private mount namespace): the sweep ends with exit 1 and a message naming the
# full disk and the file, its summary counts what the file holds, the file passes SQLite's
# integrity check, and `tuner resume` goes on once space is freed. Needs root (for the mount);
# skipped with the reason otherwise.
#   full_disk_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; base="$2"
if [ -z "${TUNER_FULL_DISK_NAMESPACE:-}" ]; then
  [ "$(id -u)" = 0 ] || { echo "SKIP: mounting a small file system needs root"; exit 0; }
  command -v unshare >/dev/null || { echo "SKIP: unshare(1) is missing"; exit 0; }
  unshare -m true 2>/dev/null || { echo "SKIP: this host refuses a private mount namespace"; exit 0; }
  # The same script, in a mount namespace of its own: its mount is gone when it exits.
  TUNER_FULL_DISK_NAMESPACE=1 exec unshare -m --propagation private "$0" "$@"
fi
work="$base/full-disk-$$"
source "$(dirname "$0")/process_test_lib.sh"
cleanup_mount() { umount "$work/disk" 2>/dev/null; cleanup; }
trap cleanup_mount EXIT
mkdir -p "$work/disk"
mount -t tmpfs -o size=2m tmpfs "$work/disk" || { echo "SKIP: cannot mount a tmpfs here"; exit 0; }
write_slow_trial "$work/slow.py" 2 0.1
db="$work/disk/study.db"
cat >"$work/full.json" <<JSON
{"version": 1, "name": "full", "storage": "$db",
 "space": {"params": {"x": {"type": "float", "low": -2, "high": 2}}},
 "objective": {"metric": "loss", "direction": "minimize"}, "budget": {"trials": 1000},
 "sampler": {"type": "random", "seed": 1}, "executors": {"local": 2},
 "job": {"kind": "command", "argv": ["python3", "$work/slow.py", "{x}"]}}
JSON
count() {  # STATE: the study's trials in that state
  python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1], timeout=30).execute("select count(*) from trials where state = ?", (sys.argv[2],)).fetchone()[0])' "$db" "$1"
}

"$tuner" sweep "$work/full.json" >"$work/sweep.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
for _ in $(seq 1 200); do [ "$(count COMPLETE 2>/dev/null || echo 0)" -ge 3 ] && break; sleep 0.05; done
[ "$(count COMPLETE)" -ge 3 ] || fail "no trial finished: $(cat "$work/sweep.out")"
# The disk fills up: another program's file takes every free block.
dd if=/dev/zero of="$work/disk/filler" bs=4k >/dev/null 2>&1
timeout 60 tail --pid=$sweep_pid -f /dev/null || fail "the sweep went on with a full disk: $(cat "$work/sweep.out")"
wait $sweep_pid; rc=$?
out=$(cat "$work/sweep.out")
[ $rc = 1 ] || fail "full disk: rc $rc, $out"
grep -q "warning: cannot store the study's outcomes and new trials: .*$db.*the disk is full" <<<"$out" ||
  fail "the full disk was not said at once, naming the file: $out"
grep -q "sweep 'full' stopped: its storage refuses writes: .*$db.*the disk is full" <<<"$out" ||
  fail "no stop reason naming the full disk and the file: $out"
check=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("pragma integrity_check").fetchone()[0])' "$db")
[ "$check" = ok ] || fail "integrity_check after the full disk: $check"
said=$(sed -n "s/^sweep 'full': [0-9]*\/1000 done (\([0-9]*\) complete.*/\1/p" <<<"$out")
stored=$(count COMPLETE)
[ -n "$said" ] && [ "$said" = "$stored" ] || fail "the summary says $said complete, the file holds $stored: $out"

# Space freed: the study goes on where it stopped.
rm -f "$work/disk/filler"
out=$("$tuner" resume --study full --storage "$db" --trials $((stored + 3)) 2>&1); rc=$?
[ $rc = 0 ] || fail "resume once space is freed: rc $rc, $out"
[ "$(count COMPLETE)" = $((stored + 3)) ] || fail "resume did not go on: $out"
[ "$(count RUNNING)" = 0 ] || fail "resume left RUNNING trials: $out"
echo PASS
