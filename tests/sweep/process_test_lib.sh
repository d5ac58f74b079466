# What the shell tests that start tuner processes share. Source it after setting $work: it makes
# a fresh $work, removed at exit together with every process whose pid is in $pids, and defines
# fail() and write_slow_trial().

rm -rf "$work"; mkdir -p "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# write_slow_trial FILE STEPS SECONDS_PER_STEP: a command trial (`python3 FILE X [RUNS_FILE]`)
# that reports a loss every step and, given RUNS_FILE, appends its trial number there when it
# ends; its final loss is (X - 1)^2.
write_slow_trial() {
  cat >"$1" <<PY
import json, os, sys, time
x = float(sys.argv[1])
for step in range($2):
    time.sleep($3)
    print(json.dumps({"step": step, "loss": (x - 1) ** 2 + 1 / (step + 1)}), flush=True)
if len(sys.argv) > 2:
    with open(sys.argv[2], "a") as runs:
        runs.write(os.environ["TUNER_TRIAL_NUMBER"] + "\n")
print(json.dumps({"loss": (x - 1) ** 2}), flush=True)
PY
}
