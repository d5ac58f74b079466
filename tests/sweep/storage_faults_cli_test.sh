#!/usr/bin/env bash
# The study database under a running sweep: deleted while the sweep runs.
#   storage_faults_cli_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/storage-faults-cli-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

printf 'import sys, time\ntime.sleep(0.3)\nprint("{\\"loss\\": " + sys.argv[1] + "}")\n' >"$work/slow.py"
cat >"$work/deleted.json" <<JSON
{"version": 1, "name": "deleted", "storage": "$work/deleted.db",
 "space": {"params": {"x": {"type": "float", "low": 0, "high": 1}}},
 "objective": {"metric": "loss", "direction": "minimize"}, "budget": {"trials": 200},
 "executors": {"local": 2},
 "job": {"kind": "command", "argv": ["python3", "$work/slow.py", "{x}"]}}
JSON
complete() {  # DB: the number of COMPLETE trials
  python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from trials where state = \"COMPLETE\"").fetchone()[0])' "$1" 2>/dev/null || echo 0
}

# Regression: a study database deleted while the sweep ran lost every trial without a word (the
# sweep went on against the unlinked file, exited 0, and left a new empty database at the path).
"$tuner" sweep "$work/deleted.json" >"$work/out.txt" 2>&1 &
pid=$!
for _ in $(seq 100); do
  [ "$(complete "$work/deleted.db")" -ge 2 ] && break
  sleep 0.1
done
[ "$(complete "$work/deleted.db")" -ge 2 ] || { kill $pid; fail "no trial finished: $(cat "$work/out.txt")"; }
rm -f "$work/deleted.db"
timeout 30 tail --pid=$pid -f /dev/null || { kill -9 $pid; fail "the sweep went on after its database was deleted"; }
wait $pid; rc=$?
out=$(cat "$work/out.txt")
[ $rc = 1 ] || fail "deleted database: rc $rc, $out"
grep -q "the study database $work/deleted.db was deleted while it was open" <<<"$out" || fail "no word of the deletion: $out"
[ ! -e "$work/deleted.db" ] || fail "a new database was created at the path: $out"
recovered=$(ls "$work"/deleted.db.recovered-* 2>/dev/null | grep -v -- '-wal$\|-shm$' | head -1)
[ -n "$recovered" ] || fail "no recovered copy: $out"
grep -q "tuner resume --study deleted --storage $recovered" <<<"$out" || fail "no way to go on: $out"
[ "$(complete "$recovered")" -ge 2 ] || fail "the recovered copy lost the finished trials"
running=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from trials where state = \"RUNNING\"").fetchone()[0])' "$recovered")
[ "$running" = 0 ] || fail "the recovered copy has $running RUNNING trial(s): they were not stopped"
out=$("$tuner" resume --study deleted --storage "$recovered" --trials 6 2>&1); rc=$?
[ $rc = 0 ] || fail "resume from the recovered copy: rc $rc, $out"

echo PASS
