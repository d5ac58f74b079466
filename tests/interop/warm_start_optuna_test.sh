#!/usr/bin/env bash
# Warm start from a study Optuna wrote: a tiny Optuna script makes a study in a SQLite file
# (COMPLETE, PRUNED and FAIL trials, its metric named), and a `tuner sweep` warm-started from it
# models from its first trial; a metric of another name is refused unless allowed.
#   warm_start_optuna_test.sh BUILD_DIR TUNER_BINARY
# Uses optuna from BUILD_DIR/interop-venv (created from PyPI when missing, as run_interop.sh does).
set -uo pipefail
build="$1"; tuner="$2"
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_warm_start.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

venv="$build/interop-venv"
if ! "$venv/bin/python" -c "import optuna" 2>/dev/null; then
  echo "creating $venv with the latest optuna from PyPI"
  python3 -m venv "$venv" && "$venv/bin/pip" install -q optuna || fail "cannot install optuna"
fi

"$venv/bin/python" - "$work/optuna.db" <<'PY' || fail "optuna could not write its study"
import sys, warnings, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
study = optuna.create_study(study_name="from_optuna", storage="sqlite:///" + sys.argv[1],
                            sampler=optuna.samplers.RandomSampler(seed=4))
study.set_metric_names(["loss"])
def objective(trial):
    x = trial.suggest_float("x", -10.0, 10.0)
    y = trial.suggest_float("y", -10.0, 10.0)
    return (x - 1.5) ** 2 + (y + 2.0) ** 2
study.optimize(objective, n_trials=14)
pruned = study.ask({"x": optuna.distributions.FloatDistribution(-10.0, 10.0),
                    "y": optuna.distributions.FloatDistribution(-10.0, 10.0)})
pruned.report(50.0, step=1)
study.tell(pruned, state=optuna.trial.TrialState.PRUNED)
failed = study.ask({"x": optuna.distributions.FloatDistribution(-10.0, 10.0)})
study.tell(failed, state=optuna.trial.TrialState.FAIL)
print("optuna wrote", len(study.trials), "trials")
PY

cat > "$work/objective.py" <<'PY'
import json, sys
x, y = float(sys.argv[1]), float(sys.argv[2])
loss = (x - 1.5) ** 2 + (y + 2.0) ** 2
print(json.dumps({"loss": loss, "val_loss": loss}), flush=True)
PY
# sweep_file NAME METRIC WARM_START > file
sweep_file() {
  cat <<JSON
{"version": 1, "name": "$1",
 "space": {"params": {"x": {"type": "float", "low": -10.0, "high": 10.0},
                      "y": {"type": "float", "low": -10.0, "high": 10.0}}},
 "objective": {"metric": "$2", "direction": "minimize"},
 "sampler": {"type": "tpe", "seed": 5},
 "budget": {"trials": 3},
 "job": {"kind": "command", "argv": ["python3", "$work/objective.py", "{x}", "{y}"]},
 "executors": {"local": 2},
 "warm_start": $3}
JSON
}

sweep_file warm loss '{"study": "from_optuna", "storage": "optuna.db"}' > "$work/warm.json"
out=$("$tuner" sweep "$work/warm.json" 2>&1) || fail "the warm sweep exited $?: $out"
# 14 COMPLETE and 1 PRUNED; the FAIL one is not read.
grep -q "warm start: 15 observations from study 'from_optuna' in $work/optuna.db" <<<"$out" ||
  fail "no warm-start line in: $out"
origins=$("$tuner" trials --storage "$work/warm.db" --study warm --json |
  python3 -c 'import json, sys; print(" ".join(json.loads(l).get("sampler", "-") for l in sys.stdin))')
[ "$origins" = "tpe tpe tpe" ] || fail "warm-started trials came from: $origins"
# Optuna's study is as it was.
"$venv/bin/python" - "$work/optuna.db" <<'PY' || fail "the Optuna study changed"
import sys, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.load_study(study_name="from_optuna", storage="sqlite:///" + sys.argv[1])
assert len(study.trials) == 16, len(study.trials)
PY

sweep_file other val_loss '{"study": "from_optuna", "storage": "optuna.db"}' > "$work/other.json"
out=$("$tuner" sweep "$work/other.json" 2>&1); rc=$?
[ $rc != 0 ] && grep -q "has the metric(s) loss and this study val_loss" <<<"$out" ||
  fail "another metric: rc $rc, $out"
sweep_file other val_loss \
  '{"study": "from_optuna", "storage": "optuna.db", "allow_other_objective": true}' \
  > "$work/other.json"
out=$("$tuner" sweep "$work/other.json" 2>&1) || fail "allowed other metric exited $?: $out"
echo PASS
