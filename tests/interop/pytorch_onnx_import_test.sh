#!/usr/bin/env bash
# PyTorch's ONNX files read by the engine. pytorch_models.py trains an MLP, a small CNN
# (conv, relu, max pool, linear) and a CNN with batch norms (after a convolution, after a ReLU,
# after a linear layer) with PyTorch, and exports each with torch.onnx.export in eval mode, with
# each exporter this PyTorch has (TorchScript, dynamo=False; torch.export, dynamo=True). Then:
# - every file is imported (training/export/onnx_import.h) by interop_onnx_import_predict (the
#   dynamo exporter's with its larger weights in external data beside it), whose layers must be
#   the PyTorch model's (a batch norm that the exporter folded into the convolution or linear
#   layer before it is absent: the test says how many each exporter folds), and whose eval-mode
#   outputs on 9 inputs must be PyTorch's: |engine - torch| <= 1e-5 * max(|torch|, 1), the same
#   class for each;
# - `tuner trial --engine-job` starts from the MLP's file (training.init_from) with every layer
#   frozen, on the MLP's own training data (npy, standardized so the engine's normalization keeps
#   it as it is): it logs where it started from, and its train_loss is PyTorch's cross-entropy
#   on that data (relative 1e-4);
# - a 2-trial `tuner sweep` (init_from relative to the sweep file) starts from the other
#   exporter's file: the trial with every layer frozen reports PyTorch's loss at both epochs, the
#   one with none frozen fine-tunes from it (its first epoch's loss far below a random start's).
#   pytorch_onnx_import_test.sh BUILD_DIR TUNER_BINARY IMPORT_PREDICT_BINARY
# Uses torch, onnx, onnxscript and numpy from PyPI in BUILD_DIR/torch-venv (created when
# missing); SKIP when they cannot be installed.
set -uo pipefail
build=$1; tuner=$(realpath "$2"); predict=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }

venv="$build/torch-venv"
if ! "$venv/bin/python" -c "import torch, onnx, onnxscript, numpy" 2>/dev/null; then
  echo "pytorch import: creating $venv with torch, onnx, onnxscript and numpy from PyPI"
  { python3 -m venv "$venv" && "$venv/bin/pip" install -q torch onnx onnxscript numpy; } ||
    { echo "SKIP: torch could not be installed from PyPI into $venv"; exit 0; }
fi
py="$venv/bin/python"
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_pytorch_import.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$py" "$here/pytorch_models.py" export "$work" || fail "PyTorch could not train and export"
manifest="$work/manifest.json"

# Each file: the layers read, then the outputs.
"$py" - "$manifest" > "$work/files.txt" <<'PY' || fail "no file to import"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["models"], "no exporter wrote a file"
for f in m["models"]:
    print(f["name"], f["exporter"], f["onnx"])
PY
while read -r name exporter onnx; do
  spec=$("$predict" "$onnx" "$work/$name.input.f32" "$work/$name.$exporter.engine.f32") ||
    fail "$name ($exporter): the engine could not import $onnx"
  "$py" - "$manifest" "$name" "$exporter" "$spec" <<'PY' || fail "$name ($exporter): layers"
import json, sys
manifest, name, exporter, spec = sys.argv[1:]
want = next(m["layers"] for m in json.load(open(manifest))["models"] if m["name"] == name)
got = [l["type"] for l in json.loads(spec)["layers"]]
# The layers in order; a batch norm right after a convolution or a linear layer may be missing
# (folded by the exporter into that layer's weights, as eval mode allows).
j, folded = 0, []
for i, t in enumerate(want):
    if j < len(got) and got[j] == t:
        j += 1
    elif t == "batch_norm" and i > 0 and want[i - 1] in ("conv2d", "linear"):
        folded.append(want[i - 1])
    else:
        sys.exit(f"{name} ({exporter}): read as {got}, PyTorch's layers are {want}")
if j != len(got):
    sys.exit(f"{name} ({exporter}): read as {got}, PyTorch's layers are {want}")
kept = got.count("batch_norm")
note = ""
if "batch_norm" in want:
    note = (f"{kept} batch norm(s) kept, {len(folded)} folded by the exporter into the "
            f"{', '.join(folded) or '-'} before them")
print(f"{name} ({exporter}): {len(got)} layers{': ' + note if note else ''}")
PY
  "$py" "$here/pytorch_models.py" compare "$work" "$name" "$work/$name.$exporter.engine.f32" ||
    fail "$name ($exporter): predictions"
done < "$work/files.txt"

# The MLP's files, by exporter.
mapfile -t mlp_files < <(awk '$1 == "mlp" {print $3}' "$work/files.txt")
loss=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["mlp_loss"])' "$manifest")
close() {  # close VALUE: within 1e-4 of PyTorch's loss, relative
  "$py" -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-4 * abs(b))' \
    "$1" "$loss"
}
# job INIT_FROM FREEZE EPOCHS LR: the MLP of pytorch_models.py on its training data.
job() {
  cat <<JSON
{"kind": "engine",
 "model": {"input": [12], "layers": [
   {"type": "linear", "out": 32}, {"type": "relu"},
   {"type": "linear", "out": 16}, {"type": "tanh"},
   {"type": "linear", "out": 3}]},
 "data": {"format": "npy", "dir": "$work", "x": "mlp_x.npy", "y": "mlp_y.npy",
          "validation_fraction": 0},
 "training": {"epochs": $3, "batch_size": 64, "lr": $4, "seed": 1,
              "init_from": "$1", "freeze": $2},
 "threads": 1,
 "objective_metric": "train_loss"}
JSON
}

echo "== tuner trial starts from ${mlp_files[0]##*/}, every layer frozen"
job "${mlp_files[0]}" 5 1 0.01 > "$work/frozen.json"
out=$(TUNER_PARAMS='{}' TUNER_TRIAL_NUMBER=0 "$tuner" trial --engine-job "$work/frozen.json" \
      2>&1) || fail "tuner trial: $out"
grep -q "init_from: started from ${mlp_files[0]}" <<<"$out" || fail "no start line in: $out"
got=$(grep -o '"train_loss":[^,}]*' <<<"$out" | tail -1 | cut -d: -f2)
close "$got" || fail "train_loss $got with every layer frozen, PyTorch's loss $loss"
echo "train_loss $got, PyTorch's $loss"

onnx=${mlp_files[${#mlp_files[@]} - 1]}
echo "== tuner sweep starts from ${onnx##*/}: a trial frozen, a trial fine-tuned"
mkdir -p "$work/sweep" && cp "$onnx"* "$work/sweep/"  # the file and its external data
"$py" - "$work/sweep/sweep.json" "$(job "${onnx##*/}" '"{freeze}"' 2 0.01)" <<'PY'
import json, sys
sweep = {"version": 1, "name": "from_pytorch",
         "space": {"params": {"freeze": {"type": "categorical", "choices": [5, 0]}}},
         "objective": {"metric": "train_loss", "direction": "minimize"},
         "sampler": {"type": "grid"}, "budget": {"trials": 2},
         "job": json.loads(sys.argv[2]), "executors": {"local": 1}}
json.dump(sweep, open(sys.argv[1], "w"))
PY
out=$(cd "$work/sweep" && "$tuner" sweep sweep.json 2>&1) || fail "tuner sweep: $out"
"$tuner" trials --storage "$work/sweep/from_pytorch.db" --study from_pytorch --json \
  > "$work/trials.jsonl" || fail "tuner trials"
"$py" - "$work/trials.jsonl" "$loss" <<'PY' || fail "the sweep's trials"
import json, math, sys
trials = {t["params"]["freeze"]: t for t in map(json.loads, open(sys.argv[1])) if t}
loss = float(sys.argv[2])
assert all(t["state"] == "COMPLETE" for t in trials.values()), trials
frozen = list(trials[5]["intermediate_values"].values())
assert len(frozen) == 2 and all(abs(v - loss) <= 1e-4 * loss for v in frozen), (frozen, loss)
# Fine-tuned: its first epoch starts from PyTorch's weights, far below a random start's ln 3.
tuned = list(trials[0]["intermediate_values"].values())
assert len(tuned) == 2 and tuned[0] < 0.5 * math.log(3), tuned
print(f"frozen trial: train_loss {frozen}; fine-tuned trial: {tuned} (PyTorch's {loss:.6g})")
PY
echo PASS
