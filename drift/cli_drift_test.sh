#!/usr/bin/env bash
# tuner drift as a CD job meets it, on real data: a tiny model trained by tuner sweep and
# exported; request logs in the model server's format (drift_test_log) of Fashion-MNIST training
# images 1000.. with the model's outputs, unshifted (exit 0, nothing flagged) and shifted
# (brightened, inverted, noisy, two classes only: exit 3, the moved features named), against the
# first 1000 training images as the reference. Then the other inputs (a CSV, a log without a
# model) and the errors (a malformed line, --skip-bad, usage).
#   cli_drift_test.sh TUNER DRIFT_TEST_LOG
set -euo pipefail
tuner=$1
make_log=$2
here=$(cd "$(dirname "$0")" && pwd)
data=${TUNER_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: install Debian's dataset-fashion-mnist"
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_cli_drift.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect PATTERN FILE
  grep -q -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in the output above"; }
}
refuse() {  # refuse PATTERN FILE
  if grep -q -- "$1" "$2"; then cat "$2" >&2; fail "did not expect '$1' in the output above"; fi
}
# drift NAME EXPECTED_STATUS ARGS...: runs tuner drift, output in $work/NAME.out
drift() {
  local name=$1 want=$2 status=0
  shift 2
  "$tuner" drift "$@" > "$work/$name.out" 2> "$work/$name.err" || status=$?
  if [ "$status" != "$want" ]; then
    cat "$work/$name.out" "$work/$name.err" >&2
    fail "tuner drift ($name) exited $status, expected $want"
  fi
}

cp "$here/testdata/drift_sweep.json" "$work/"
"$tuner" sweep "$work/drift_sweep.json" --executors 1 > "$work/sweep.out" 2>&1 ||
  { cat "$work/sweep.out"; fail "tuner sweep"; }
"$tuner" export --study drift_model --storage "$work/drift_model.db" --trial 0 \
  --registry "$work/registry" --name fmnist > "$work/export.out" ||
  { cat "$work/export.out"; fail "tuner export"; }
model_dir="$work/registry/fmnist/1"
[ -f "$model_dir/MLmodel" ] || fail "no exported model at $model_dir"

images="$data/train-images-idx3-ubyte.gz"
labels="$data/train-labels-idx1-ubyte.gz"
log() {  # log NAME ARGS...: a log of 1000 images from training image 1000 on
  local name=$1
  shift
  "$make_log" --images "$images" --labels "$labels" --begin 1000 --count 1000 \
    --model "$model_dir" --out "$work/$name" "$@" > /dev/null
}
log unshifted
log brightened --shift brighten
log inverted --shift invert
log noisy --shift noise
log two_classes --classes 0,1 --begin 2000
ls "$work/unshifted" | grep -q '^requests-20261202T110000-1\.jsonl$' || fail "log file names"

reference=(--reference "$images" --reference-limit 1000)
# Unshifted: nothing flagged, exit 0; the model (an alias of the registry) gives the reference's
# logits and classes.
"$tuner" registry alias fmnist 1 champion --registry "$work/registry" > /dev/null
drift unshifted 0 "${reference[@]}" --current "$work/unshifted" --model "$work/registry/fmnist@champion"
cat "$work/unshifted.out"
expect "^current:   request log $work/unshifted: 1000 samples (125 requests in 4 files, 2026-12-02T11:00:00.000Z .. 2026-12-02T11:00:31.000Z; model fmnist version 1)" "$work/unshifted.out"
expect "^reference: idx $images: 1000 samples" "$work/unshifted.out"
for f in image_mean image_std nonzero_fraction intensity_q50 intensity_q90 intensity_max \
         center_row center_col spread edge_strength logit_0 logit_9 confidence; do
  expect "^$f  *\(input\|output\) " "$work/unshifted.out"
done
expect "class distribution (reference predicted, current predicted)" "$work/unshifted.out"
expect "p-value < 0.00227 (0.05 / 22 tests, Bonferroni)" "$work/unshifted.out"
expect "^no drift: none of 22 tests flagged$" "$work/unshifted.out"
refuse "DRIFT" "$work/unshifted.out"
drift unshifted_json 0 "${reference[@]}" --current "$work/unshifted" --model "$model_dir" --json
python3 - "$work/unshifted_json.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["drift"] is False and r["flagged"] == [], r["flagged"]
assert r["tests"] == 22 and len(r["features"]) == 21, r["tests"]
assert r["current"]["requests"] == 125 and r["current"]["files"] == 4
assert r["classes"]["reference_source"] == "predicted" and sum(r["classes"]["current_counts"]) == 1000
assert all(f["psi"] < 0.2 for f in r["features"]), [(f["name"], f["psi"]) for f in r["features"]]
PY

# Shifted: exit 3, the moved features named.
drift brightened 3 "${reference[@]}" --current "$work/brightened" --model "$model_dir"
expect "^image_mean .*DRIFT (psi, p)" "$work/brightened.out"
expect "^nonzero_fraction .*DRIFT (psi, p)" "$work/brightened.out"
expect "^DRIFT: [0-9]* of 22 flagged: .*image_mean" "$work/brightened.out"
drift inverted 3 "${reference[@]}" --current "$work/inverted" --model "$model_dir"
expect "^image_mean .*DRIFT (psi, p)" "$work/inverted.out"
expect "class distribution .*DRIFT" "$work/inverted.out"
drift noisy 3 "${reference[@]}" --current "$work/noisy" --model "$model_dir"
expect "^edge_strength .*DRIFT (psi, p)" "$work/noisy.out"
expect "^nonzero_fraction .*DRIFT" "$work/noisy.out"
drift two_classes 3 "${reference[@]}" --current "$work/two_classes" --model "$model_dir" --json
python3 - "$work/two_classes.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["drift"] is True and "class_distribution" in r["flagged"], r["flagged"]
c = r["classes"]
assert c["drift"] and "psi" in c["flags"] and "p" in c["flags"], c
# Two classes (T-shirt/top and trouser) hold most of the current predictions.
assert sum(sorted(c["current_counts"])[-2:]) > 800, c["current_counts"]
PY
# Thresholds are the gate's: loose enough, the brightened log passes.
drift brightened_loose 0 "${reference[@]}" --current "$work/brightened" --model "$model_dir" \
  --psi-max 1000 --p-min 0
expect "thresholds: PSI > 1000;" "$work/brightened_loose.out"
drift ks_max 3 "${reference[@]}" --current "$work/unshifted" --model "$model_dir" --ks-max 0.001
expect "DRIFT (ks)" "$work/ks_max.out"

# Without --model: the reference's labels against the log's predictions, the outputs not
# compared (a note says so); the inputs still are.
drift no_model 0 "${reference[@]}" --current "$work/unshifted" --psi-max 0.5 --p-min 0
expect "class distribution (reference labels, current predicted)" "$work/no_model.out"
expect "the model's outputs are not compared: the reference has none (--model computes them)" "$work/no_model.out"
refuse "^logit_0" "$work/no_model.out"
# A log against a log, one file of it against the directory.
drift log_vs_log 0 --reference "$work/unshifted" --image-shape 28x28 \
  --current "$work/unshifted/requests-20261202T110010-2.jsonl"
expect "^logit_3  *output " "$work/log_vs_log.out"

# A malformed line names its file and line; --skip-bad counts it.
cp -r "$work/unshifted" "$work/bad"
bad_file="$work/bad/requests-20261202T110010-2.jsonl"
sed -i '3s/.*/{"time": "2026-12-02T11:00:11.000Z", "inputs": [[1, 2/' "$bad_file"
drift bad 1 "${reference[@]}" --current "$work/bad" --model "$model_dir"
expect "error: $bad_file:3: not JSON: " "$work/bad.err"
drift skip_bad 0 "${reference[@]}" --current "$work/bad" --model "$model_dir" --skip-bad 1
expect "1 malformed lines skipped" "$work/skip_bad.out"
expect "$bad_file:3: skipped: not JSON" "$work/skip_bad.out"
sed -i '5s/.*/{"inputs": [[1, 2, 3]], "outputs": [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]], "predicted": [0]}/' "$bad_file"
drift too_many_bad 1 "${reference[@]}" --current "$work/bad" --model "$model_dir" --skip-bad 1
expect "$bad_file:5: inputs\[0\] has 3 values, the log's earlier samples 784 (more than --skip-bad 1 malformed lines)" "$work/too_many_bad.err"

# A table: CSVs of named columns, the current one shifted in one column and reordered.
awk 'BEGIN { print "label,age,income"; for (i = 0; i < 600; i++) printf "%d,%d,%.1f\n", i % 3, 20 + (i * 7) % 50, 1000 + (i * 13) % 400 }' > "$work/ref.csv"
awk 'BEGIN { print "income,age"; for (i = 0; i < 500; i++) printf "%.1f,%d\n", 1200 + (i * 13) % 400, 20 + (i * 11) % 50 }' > "$work/cur.csv"
drift csv 3 --reference "$work/ref.csv" --current "$work/cur.csv" --json
python3 - "$work/csv.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["flagged"] == ["income"], r["flagged"]
assert [f["name"] for f in r["features"]] == ["age", "income"]
assert r["classes"] is None
assert any("the predicted class distribution is not compared: the current has no classes" in n for n in r["notes"]), r["notes"]
PY

# A model trained on a table: the CSVs are read by its columns' names and encoded as its server
# logs them (a categorical column one input per category). Rows 600.. repeat rows 0.. (every
# column's period divides 600): nothing flagged; a current where most rows are of plan "team" is
# flagged naming that input.
awk 'BEGIN { print "segment,age,income,plan"; split("free pro team", p, " ");
  for (i = 0; i < 1200; i++) printf "%s,%d,%.1f,%s\n", ((i % 50) + (i % 3) * 10 > 30 ? "gold" : "basic"),
    20 + (i * 7) % 50, 1000 + (i * 13) % 300, p[i % 3 + 1] }' > "$work/table_all.csv"
head -601 "$work/table_all.csv" > "$work/rows.csv"
{ head -1 "$work/table_all.csv"; tail -600 "$work/table_all.csv"; } > "$work/rows_later.csv"
awk -F, 'NR == 1 { print "plan,income,age"; next } { print (NR % 5 ? "team" : $4) "," $3 "," $2 }' \
  "$work/rows_later.csv" > "$work/rows_team.csv"
cp "$here/testdata/drift_table_sweep.json" "$work/"
"$tuner" sweep "$work/drift_table_sweep.json" --executors 1 > "$work/table_sweep.out" 2>&1 ||
  { cat "$work/table_sweep.out"; fail "tuner sweep (table)"; }
"$tuner" export --study drift_table_model --storage "$work/drift_table_model.db" --trial 0 \
  --registry "$work/registry" --name table > "$work/table_export.out" ||
  { cat "$work/table_export.out"; fail "tuner export (table)"; }
drift table_same 0 --reference "$work/rows.csv" --current "$work/rows_later.csv" \
  --model "$work/registry/table/1" --json
python3 - "$work/table_same.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
names = [f["name"] for f in r["features"]]
assert names[:6] == ["age", "income", "plan=free", "plan=pro", "plan=team", "logit_0"], names
assert r["flagged"] == [], r["flagged"]
PY
drift table_shifted 3 --reference "$work/rows.csv" --current "$work/rows_team.csv" \
  --model "$work/registry/table/1" --json
python3 - "$work/table_shifted.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert "plan=team" in r["flagged"] and "age" not in r["flagged"], r["flagged"]
PY
drift table_bad 1 --reference "$work/rows.csv" --current "$work/cur.csv" \
  --model "$work/registry/table/1"
expect "current $work/cur.csv: " "$work/table_bad.err"

# Usage and input errors.
drift usage 2 --reference "$images"
expect "tuner drift: --current is required" "$work/usage.err"
drift shape 1 --reference "$work/ref.csv" --current "$work/unshifted"
expect "the reference's samples (csv $work/ref.csv) have 2 input values, the current's (request log $work/unshifted) 784" "$work/shape.err"
mkdir "$work/empty"
drift empty 1 "${reference[@]}" --current "$work/empty"
expect "$work/empty: no request log files" "$work/empty.err"
drift missing 1 "${reference[@]}" --current "$work/missing"
expect "error: $work/missing: no such file or directory" "$work/missing.err"
drift bad_shape 2 "${reference[@]}" --current "$work/unshifted" --image-shape 28x
expect "expected HxW or CxHxW" "$work/bad_shape.err"
"$tuner" help > "$work/help.out"
expect "3 drift past a threshold (tuner drift)" "$work/help.out"

echo "cli drift: passed"
