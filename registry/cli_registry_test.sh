#!/usr/bin/env bash
# The registry's commands as a user meets them, on two tiny trained models: tuner sweep, then
# tuner export (the promotion rule), tuner registry list/show/alias/tag/delete, and tuner predict
# on the Fashion-MNIST test slice the trials were evaluated on, which must print the accuracy the
# trial recorded. Also the errors: an unknown alias, a directory that is not a registry.
#   cli_registry_test.sh TUNER
set -euo pipefail
tuner=$1
here=$(cd "$(dirname "$0")" && pwd)
data=${TUNER_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$data/t10k-images-idx3-ubyte.gz" ]; then
  echo "skipped: install Debian's dataset-fashion-mnist"
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_cli_registry.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect PATTERN FILE
  grep -q -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in the output above"; }
}

cp "$here/testdata/tiny_sweep.json" "$work/"
"$tuner" sweep "$work/tiny_sweep.json" --executors 2 > "$work/sweep.out" 2>&1 ||
  { cat "$work/sweep.out"; fail "tuner sweep"; }
db="$work/tiny_sweep.db"
reg="$work/registry"

"$tuner" export --study tiny_sweep --storage "$db" --trial 0 --registry "$reg" --name tiny \
  --promote-if-better > "$work/export1.out"
expect "as tiny/1" "$work/export1.out"
expect "promoted to champion: no champion yet" "$work/export1.out"
"$tuner" export --study tiny_sweep --storage "$db" --trial 1 --registry "$reg" --name tiny \
  --promote-if-better --alias challenger > "$work/export2.out"
expect "as tiny/2" "$work/export2.out"
expect "promot" "$work/export2.out"
# The default trial is the best one.
"$tuner" export --study tiny_sweep --storage "$db" --registry "$reg" --name best > "$work/export3.out"
expect "as best/1" "$work/export3.out"

"$tuner" registry list --registry "$reg" > "$work/list.out"
expect "tiny: 2 versions, latest 2" "$work/list.out"
expect "@champion" "$work/list.out"
"$tuner" registry show tiny/2 --registry "$reg" > "$work/show.out"
expect "study: tiny_sweep, trial 1" "$work/show.out"
expect "metric: val_accuracy" "$work/show.out"
expect "promotion:" "$work/show.out"
"$tuner" registry alias tiny 1 staging --registry "$reg" > /dev/null
"$tuner" registry tag tiny 1 owner ci --registry "$reg" > /dev/null
"$tuner" registry show tiny@staging --registry "$reg" > "$work/show1.out"
expect "tag owner = ci" "$work/show1.out"
for f in MLmodel model.onnx python_env.yaml requirements.txt engine/model.ckpt engine/model_spec.json; do
  [ -f "$reg/tiny/1/$f" ] || fail "missing $reg/tiny/1/$f"
done

# Batch inference on the test slice the trials were evaluated on: the recorded accuracy.
"$tuner" predict --model "$reg/tiny@champion" --input "$data/t10k-images-idx3-ubyte.gz" \
  --limit 1000 --output "$work/pred.csv" > "$work/predict.out"
cat "$work/predict.out"
expect "accuracy 0\.[0-9]* ([0-9]*/1000)" "$work/predict.out"
expect "(the same)" "$work/predict.out"
[ "$(wc -l < "$work/pred.csv")" = 1001 ] || fail "pred.csv should have a header and 1000 rows"
head -1 "$work/pred.csv" | grep -q "^index,predicted,label,p0,p1,p2,p3,p4,p5,p6,p7,p8,p9$" ||
  fail "pred.csv header: $(head -1 "$work/pred.csv")"
# A CSV of features: the model's raw inputs, Fashion-MNIST's own pixel values 0..255, as the
# MLmodel's signature (uint8) says; with a label column.
awk 'BEGIN { printf "label"; for (i = 0; i < 784; i++) printf ",px%d", i; print "";
             for (r = 0; r < 3; r++) { printf "%d", r; for (i = 0; i < 784; i++) printf ",%d", (i * 37) % 256; print "" } }' \
  > "$work/features.csv"
"$tuner" predict --model "$reg/tiny/2" --input "$work/features.csv" --output "$work/pred2.csv" \
  > "$work/predict2.out"
expect "predicted 3 samples" "$work/predict2.out"
[ "$(wc -l < "$work/pred2.csv")" = 4 ] || fail "pred2.csv should have 3 rows"
expect '"dtype":"uint8","shape":\[-1,1,28,28\]' "$reg/tiny/2/MLmodel"
# Pixels scaled to [0, 1] are refused, not answered wrongly (issue 15, item 12).
awk 'BEGIN { for (i = 0; i < 784; i++) printf "%s%.3f", (i ? "," : ""), (i % 7) / 7; print "" }' \
  > "$work/scaled.csv"
if "$tuner" predict --model "$reg/tiny/2" --input "$work/scaled.csv" 2> "$work/err0.out" > /dev/null; then
  fail "pixels in [0, 1] must be refused by a model that takes uint8 pixels"
fi
expect "scaled.csv: input value 0.14.* (sample 0, value 1) is not a uint8 pixel value 0..255" "$work/err0.out"

# The registry's tables in the study database.
python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT model, version, trial FROM tuner_registry_versions ORDER BY model, version").fetchall()
assert rows == [("best", 1, rows[0][2]), ("tiny", 1, 0), ("tiny", 2, 1)], rows
assert db.execute("SELECT COUNT(*) FROM tuner_registry_promotions").fetchone()[0] == 2
PY

# Errors name what is wrong.
if "$tuner" predict --model "$reg/tiny@nope" --input "$work/features.csv" 2> "$work/err1.out"; then
  fail "an unknown alias must fail"
fi
expect "model 'tiny' has no alias 'nope'" "$work/err1.out"
mkdir "$work/not-a-registry" && echo hi > "$work/not-a-registry/notes.txt"
if "$tuner" registry list --registry "$work/not-a-registry" 2> "$work/err2.out"; then
  fail "a directory that is not a registry must fail"
fi
expect "is not a model registry" "$work/err2.out"
if "$tuner" export --study tiny_sweep --storage "$db" --trial 7 --registry "$reg" 2> "$work/err3.out"; then
  fail "an unknown trial must fail"
fi
expect "has no trial 7" "$work/err3.out"

"$tuner" registry delete tiny/2 --registry "$reg" > /dev/null
[ ! -d "$reg/tiny/2" ] || fail "tiny/2 not deleted"
"$tuner" registry delete best --registry "$reg" > /dev/null
"$tuner" registry list --registry "$reg" > "$work/list2.out"
expect "tiny: 1 version, latest 1" "$work/list2.out"
echo "cli registry: passed"
