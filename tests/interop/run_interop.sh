#!/usr/bin/env bash
# The Optuna interop test: a study written here is read by Optuna, and a study written by Optuna
# is loaded and continued here, then read by Optuna again (and continued by it once more). The
# same both ways for constraint values (check_constraints.py): Optuna reads tuner's, and its
# TPESampler continues from them; tuner reads Optuna's (its list and its named form), and its
# TPE continues from them. And for studies of several objectives (check_multi_objective.py): the
# directions, values and front both ways, each side continuing the other's study.
#   run_interop.sh BUILD_DIR WRITE_STUDY_BINARY
# Then optuna-dashboard (PyPI, same venv) is started on a study written here and its HTTP API
# must list the study and its trials (check_dashboard.py).
# Uses the latest optuna from PyPI in BUILD_DIR/interop-venv (created when missing), and, when
# Debian's python3-optuna is installed, Optuna 3.1 under /usr/bin/python3 on files written with
# the v3.0.0.d option.
set -euo pipefail
build=$1
write_study=$2
here=$(cd "$(dirname "$0")" && pwd)
export TZ=UTC  # Optuna shows datetimes in local time; the dumps hold naive UTC

venv="$build/interop-venv"
if ! "$venv/bin/python" -c "import optuna" 2>/dev/null; then
  echo "interop: creating $venv with the latest optuna from PyPI"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q optuna
fi
if ! "$venv/bin/python" -c "import optuna_dashboard" 2>/dev/null; then
  echo "interop: installing the latest optuna-dashboard from PyPI into $venv"
  "$venv/bin/pip" install -q optuna-dashboard
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_interop.XXXXXX")
trap 'rm -rf "$work"' EXIT

run_pair() {  # run_pair PYTHON TAG [--v300d]
  local py=$1 tag=$2 opt=${3:-}
  echo "== $tag: tuner writes, optuna reads"
  "$write_study" write "$work/$tag-cpp.db" "$work/$tag-cpp.json" $opt
  "$py" "$here/check_study.py" read "$work/$tag-cpp.db" "$work/$tag-cpp.json" --then-optimize
  echo "== $tag: optuna writes, tuner continues, optuna reads"
  "$py" "$here/check_study.py" write "$work/$tag-py.db"
  "$write_study" continue "$work/$tag-py.db" "$work/$tag-py.json" from-optuna 4
  "$py" "$here/check_study.py" read "$work/$tag-py.db" "$work/$tag-py.json" --then-optimize
}

run_pair "$venv/bin/python" latest
echo "== constraints: tuner writes, optuna reads them and continues with its TPESampler"
"$write_study" write-constrained "$work/constrained-cpp.db" "$work/constrained-cpp.json"
"$venv/bin/python" "$here/check_constraints.py" read "$work/constrained-cpp.db" \
  "$work/constrained-cpp.json" --then-optimize
echo "== constraints: optuna writes them, tuner's TPE reads and continues, optuna reads"
"$venv/bin/python" "$here/check_constraints.py" write "$work/constrained-py.db"
studies=(from-optuna-constrained)
if "$venv/bin/python" -c 'import optuna, sys; sys.exit(not hasattr(optuna.trial.Trial, "set_constraint"))'; then
  studies+=(from-optuna-named)
fi
for s in "${studies[@]}"; do
  "$write_study" continue-constrained "$work/constrained-py.db" "$work/$s.json" "$s" 20
  "$venv/bin/python" "$here/check_constraints.py" read "$work/constrained-py.db" "$work/$s.json"
done
echo "== several objectives: tuner's TPE writes, optuna reads the front and continues"
"$write_study" write-mo "$work/mo-cpp.db" "$work/mo-cpp.json"
"$venv/bin/python" "$here/check_multi_objective.py" read "$work/mo-cpp.db" "$work/mo-cpp.json" \
  --then-optimize
echo "== several objectives: optuna's NSGA-II writes, tuner's TPE continues, optuna reads"
"$venv/bin/python" "$here/check_multi_objective.py" write "$work/mo-py.db"
"$write_study" continue-mo "$work/mo-py.db" "$work/mo-py.json" from-optuna-mo 12
"$venv/bin/python" "$here/check_multi_objective.py" read "$work/mo-py.db" "$work/mo-py.json"
echo "== optuna-dashboard lists a study written here"
"$write_study" write "$work/dashboard.db" "$work/dashboard.json"
timeout 180 "$venv/bin/python" "$here/check_dashboard.py" "$work/dashboard.db" \
  "$work/dashboard.json" 90
if /usr/bin/python3 -c "import optuna" 2>/dev/null; then
  run_pair /usr/bin/python3 debian --v300d
else
  echo "interop: Debian's python3-optuna is not installed; skipping the v3.0.0.d check"
fi
echo "interop: passed"
