#!/usr/bin/env bash
# A stored study whose sweep file changes its space (docs/search_space.md, "Changing the space of
# a study"): run, then changed compatibly and run again (the "space changed: ..." line is
# printed, and Optuna still samples the study), then changed incompatibly (refused, naming the
# parameter and both distributions); a direction that contradicts the metric's name warns.
#   space_change_cli_test.sh TUNER_BINARY REPO_ROOT WORK_DIR BUILD_DIR
set -uo pipefail
tuner="$1"; root="$2"; work="$3/space-change-$$"; build="$4"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
db="$work/q.db"

# sweep_file NAME DIRECTION STEPS_SPEC EXTRA_PARAMS > file
sweep_file() {
  cat <<JSON
{"version": 1, "name": "$1",
 "space": {"params": {
   "lr": {"type": "float", "low": 0.001, "high": 1.2, "log": true},
   "steps": $3,
   "x0": {"type": "float", "low": -10.0, "high": 10.0}$4}},
 "objective": {"metric": "loss", "direction": "$2"},
 "sampler": {"type": "tpe", "seed": 3, "n_startup_trials": 2},
 "budget": {"trials": 3},
 "job": {"kind": "command",
         "argv": ["python3", "$root/examples/command/train_quadratic.py",
                  "--lr", "{lr}", "--steps", "{steps}", "--x0", "{x0}"]},
 "executors": {"local": 2}}
JSON
}

sweep_file quadratic minimize '{"type": "int", "low": 5, "high": 40}' '' > "$work/v1.json"
out=$("$tuner" sweep "$work/v1.json" --storage "$db" 2>&1) || fail "first sweep exited $?: $out"
grep -q "space changed" <<<"$out" && fail "a new study reported a change: $out"

# Compatible: a new parameter with a default, a wider range.
sweep_file quadratic minimize '{"type": "int", "low": 5, "high": 80}' \
  ', "act": {"type": "categorical", "choices": ["relu", "tanh"], "default": "relu"}' > "$work/v2.json"
out=$("$tuner" sweep "$work/v2.json" --storage "$db" --trials 5 2>&1) || fail "v2 exited $?: $out"
grep -q "\[quadratic\] space changed: + act; steps \[5, 40\] -> \[5, 80\]" <<<"$out" ||
  fail "no space-changed line in: $out"
grep -q "warning" <<<"$out" && fail "unexpected warning: $out"

# Incompatible: steps becomes a float.
sweep_file quadratic minimize '{"type": "float", "low": 5, "high": 80}' \
  ', "act": {"type": "categorical", "choices": ["relu", "tanh"], "default": "relu"}' > "$work/v3.json"
out=$("$tuner" sweep "$work/v3.json" --storage "$db" --trials 6 2>&1); rc=$?
[ $rc != 0 ] || fail "an incompatible change was accepted: $out"
for s in "space.params.steps is float\[5.0, 80.0\]" "has it as int\[5, 80\]" \
  "another kind of distribution (int -> float)" "give it another name"; do
  grep -q "$s" <<<"$out" || fail "refusal lacks '$s': $out"
done
# Categorical choices of another type: refused too.
sweep_file quadratic minimize '{"type": "int", "low": 5, "high": 80}' \
  ', "act": {"type": "categorical", "choices": [1, 2]}' > "$work/v4.json"
out=$("$tuner" sweep "$work/v4.json" --storage "$db" --trials 6 2>&1); rc=$?
[ $rc != 0 ] && grep -q "choices changed type (strings -> integers)" <<<"$out" ||
  fail "choices of another type: rc $rc, $out"

# The direction warning (a new study: a study keeps its direction).
sweep_file q2 maximize '{"type": "int", "low": 5, "high": 40}' '' > "$work/w.json"
out=$("$tuner" sweep "$work/w.json" --storage "$db" --trials 1 2>&1) || fail "w exited $?: $out"
grep -q "warning: .*objective.direction is \"maximize\", but the metric \"loss\" reads as one to minimize" \
  <<<"$out" || fail "no direction warning in: $out"

# Optuna still samples the study after the accepted change (with the new space).
py="$build/interop-venv/bin/python"
if "$py" -c "import optuna" 2>/dev/null; then
  "$py" - "$db" <<'PY' || fail "optuna could not continue the study"
import sys, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.load_study(study_name="quadratic", storage="sqlite:///" + sys.argv[1],
                          sampler=optuna.samplers.TPESampler(seed=1, n_startup_trials=2))
before = len(study.trials)
def objective(trial):
    lr = trial.suggest_float("lr", 0.001, 1.2, log=True)
    steps = trial.suggest_int("steps", 5, 80)
    x0 = trial.suggest_float("x0", -10.0, 10.0)
    trial.suggest_categorical("act", ["relu", "tanh"])
    return (x0 - 3.0) ** 2 * (1 - min(lr, 1.0)) ** steps
study.optimize(objective, n_trials=3)
assert len(study.trials) == before + 3, (before, len(study.trials))
print("optuna continued the study:", before, "->", len(study.trials))
PY
else
  echo "SKIP the Optuna check: no $py with optuna (tests/interop/run_interop.sh creates it)"
fi
echo PASS
