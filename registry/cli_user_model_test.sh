#!/usr/bin/env bash
# A command trial's own files and model, as a user meets them: a sweep whose program writes into
# $TUNER_ARTIFACTS_DIR (a notes file, an MLflow model directory by hand, or an ONNX file), then
#   tuner trials --json and tuner artifacts list each trial's files;
#   the study database records them as Optuna's artifacts (and, when BUILD/interop-venv has
#   optuna, optuna.artifacts reads them with FileSystemArtifactStore(artifacts_dir));
#   tuner export registers the trial's MLflow model as it is, an ONNX file wrapped, and says what
#   to save where for a trial that saved none;
#   tuner predict and serve-model say they run engine models only.
#   cli_user_model_test.sh TUNER [BUILD_DIR]
set -euo pipefail
tuner=$1
build=${2:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_cli_user_model.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect PATTERN FILE
  grep -q -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in the output above"; }
}

# Trial 0 saves an MLflow model directory, trial 1 an ONNX file (not a valid one: the export
# checks it), trial 2, the best, nothing but notes; each one checks what it was given.
cat > "$work/train.py" <<'PY'
import json, os, pathlib, sys
folder = pathlib.Path(os.environ["TUNER_ARTIFACTS_DIR"])
assert folder.is_absolute() and folder.is_dir(), folder
n = int(os.environ["TUNER_TRIAL_NUMBER"])
assert folder.name == f"trial-{n}", folder
acc = {0: 0.8, 1: 0.7, 2: 0.9}[n]
(folder / "notes.txt").write_text(f"trial {n}\n")
if n == 0:
    model = folder / "model"
    model.mkdir()
    (model / "MLmodel").write_text(
        "artifact_path: model\nflavors:\n  python_function:\n    loader_module: mlflow.sklearn\n"
        "    model_path: model.pkl\n  sklearn:\n    pickled_model: model.pkl\n")
    (model / "model.pkl").write_bytes(b"pickled")
elif n == 1:
    (folder / "net.onnx").write_bytes(b"not onnx")
print(json.dumps({"step": 1, "acc": acc}), flush=True)
print(json.dumps({"acc": acc}))
PY
cat > "$work/user.json" <<JSON
{"name": "user",
 "space": {"params": {"c": {"type": "float", "low": 0, "high": 1}}},
 "objective": {"metric": "acc", "direction": "maximize"},
 "sampler": {"type": "random", "seed": 1}, "budget": {"trials": 3},
 "job": {"kind": "command", "argv": ["python3", "$work/train.py"], "working_dir": "/"},
 "executors": {"local": 1}}
JSON
"$tuner" sweep "$work/user.json" > "$work/sweep.out" 2>&1 || { cat "$work/sweep.out"; fail "tuner sweep"; }
expect "3/3 done" "$work/sweep.out"
db="$work/user.db"
base="$work/user.db.artifacts/user"
for n in 0 1 2; do
  [ -f "$base/trial-$n/notes.txt" ] || fail "trial $n wrote no notes into its TUNER_ARTIFACTS_DIR"
done
# The files of each trial, with their sizes.
"$tuner" trials --study user --storage "$db" --json > "$work/trials.json"
python3 - "$work/trials.json" "$base" <<'PY'
import json, sys
trials = [json.loads(line) for line in open(sys.argv[1])]
assert len(trials) == 3, trials
for t in trials:
    files = {f["path"]: f["size"] for f in t["artifacts"]}
    assert t["artifacts_dir"] == f"{sys.argv[2]}/trial-{t['number']}", t["artifacts_dir"]
    assert files["notes.txt"] == len(f"trial {t['number']}\n"), files
    assert any(p.startswith("events.out.tfevents") for p in files), files  # the executor's scalars
    if t["number"] == 0:
        assert files["model/MLmodel"] > 0 and files["model/model.pkl"] == 7, files
PY
"$tuner" artifacts --study user --storage "$db" > "$work/artifacts.out"
cat "$work/artifacts.out"
expect "files of study 'user' in $base/trial-<N>" "$work/artifacts.out"
expect "^0 *COMPLETE *4 .*model (MLflow: python_function, sklearn)" "$work/artifacts.out"
expect "^1 *COMPLETE *3 .*net.onnx (ONNX)" "$work/artifacts.out"
"$tuner" artifacts --study user --storage "$db" --trial 0 > "$work/trial0.out"
cat "$work/trial0.out"
expect "trial 0 (COMPLETE): $base/trial-0" "$work/trial0.out"
expect "^ *7 bytes  model/model.pkl" "$work/trial0.out"
expect "model: model (MLflow: python_function, sklearn); to register it: tuner export" "$work/trial0.out"
if "$tuner" artifacts --study user --storage "$db" --trial 7 > "$work/none.out" 2>&1; then
  fail "tuner artifacts --trial 7 of a study of 3 trials succeeded"
fi
expect "has no trial 7" "$work/none.out"

# Optuna's artifact records, made when each trial ended.
python3 - "$db" <<'PY'
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
rows = con.execute("SELECT t.number, a.key, a.value_json FROM trial_system_attributes a "
                   "JOIN trials t ON t.trial_id = a.trial_id WHERE a.key LIKE 'artifacts:%'").fetchall()
keys = {(n, k) for n, k, _ in rows}
assert (0, "artifacts:trial-0/model/MLmodel") in keys, keys
assert (2, "artifacts:trial-2/notes.txt") in keys, keys
for n, key, value in rows:
    meta = json.loads(json.loads(value))
    assert meta["artifact_id"] == key[len("artifacts:"):], meta
    assert set(meta) == {"artifact_id", "filename", "mimetype", "encoding"}, meta
PY
venv_python="$build/interop-venv/bin/python"
if [ -n "$build" ] && "$venv_python" -c "import optuna.artifacts" 2>/dev/null; then
  "$venv_python" - "$db" "$base" "$work/download" <<'PY'
import os, sys
import optuna
from optuna.artifacts import FileSystemArtifactStore, download_artifact, get_all_artifact_meta
optuna.logging.set_verbosity(optuna.logging.WARNING)
db, base, out = sys.argv[1:]
storage = optuna.storages.RDBStorage(f"sqlite:///{db}")
study = optuna.load_study(study_name="user", storage=storage)
store = FileSystemArtifactStore(base)
os.makedirs(out)
seen = 0
for trial in study.trials:
    metas = get_all_artifact_meta(trial, storage=storage)
    assert metas, f"trial {trial.number}: no artifacts"
    for meta in metas:
        path = os.path.join(out, meta.artifact_id.replace("/", "_"))
        download_artifact(artifact_store=store, artifact_id=meta.artifact_id, file_path=path)
        assert open(path, "rb").read() == open(os.path.join(base, meta.artifact_id), "rb").read()
        seen += 1
print(f"optuna {optuna.__version__} read {seen} artifacts with FileSystemArtifactStore")
PY
else
  echo "cli user model: Optuna's artifact API not checked (no optuna in BUILD/interop-venv)"
fi

# The export: trial 0's MLflow model as it is.
reg="$work/registry"
"$tuner" export --study user --storage "$db" --trial 0 --registry "$reg" --name clf \
  --promote-if-better > "$work/export0.out"
cat "$work/export0.out"
expect "exported trial 0 of study 'user' as clf/1" "$work/export0.out"
expect "the trial's MLflow model, as it is, of flavors python_function, sklearn, from $base/trial-0/model" "$work/export0.out"
expect "promoted to champion" "$work/export0.out"
cmp "$reg/clf/1/model.pkl" "$base/trial-0/model/model.pkl" || fail "the model was not stored as it is"
cmp "$reg/clf/1/MLmodel" "$base/trial-0/model/MLmodel" || fail "the MLmodel was not stored as it is"
"$tuner" registry show clf/1 --registry "$reg" > "$work/show.out"
expect "model: the trial's own MLflow model (flavors python_function, sklearn)" "$work/show.out"
# Trial 1's file is no ONNX model: refused, nothing registered.
if "$tuner" export --study user --storage "$db" --trial 1 --registry "$reg" --name clf \
    > "$work/export1.out" 2>&1; then
  fail "an .onnx file that is not ONNX was exported"
fi
expect "net.onnx: not an ONNX model" "$work/export1.out"
# The best trial saved no model: what to save where.
if "$tuner" export --study user --storage "$db" --registry "$reg" --name clf > "$work/export2.out" 2>&1; then
  fail "a trial without a model was exported"
fi
expect "trial 2 of study 'user' saved no model in $base/trial-2 (it holds " "$work/export2.out"
expect "mlflow.sklearn.save_model(model, os.environ\['TUNER_ARTIFACTS_DIR'\] + '/model')) or an .onnx file in \$TUNER_ARTIFACTS_DIR" "$work/export2.out"
"$tuner" registry list --registry "$reg" > "$work/list.out"
expect "clf: 1 version" "$work/list.out"

# tuner's own inference says it runs engine models only.
echo "0,0,0,0" > "$work/x.csv"
if "$tuner" predict --model "$reg/clf@champion" --input "$work/x.csv" > "$work/predict.out" 2>&1; then
  fail "tuner predict ran a user's MLflow model"
fi
expect "not an engine model: tuner predict, serve-model and drift run the engine's models only" "$work/predict.out"
expect "mlflow models serve -m" "$work/predict.out"
if timeout 20 "$tuner" serve-model --model "$reg/clf" --port 0 > "$work/serve.out" 2>&1; then
  fail "tuner serve-model served a user's MLflow model"
fi
expect "not an engine model" "$work/serve.out"
echo "cli user model: passed"
