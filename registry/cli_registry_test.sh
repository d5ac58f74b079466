#!/usr/bin/env bash
# The registry's commands as a user meets them, on two tiny trained models: tuner sweep, then
# tuner export (the promotion rule), tuner registry list/show/alias/tag/delete, and tuner predict
# on the Fashion-MNIST test slice the trials were evaluated on, which must print the accuracy the
# trial recorded. Also the errors: an unknown alias, a directory that is not a registry. Then a
# study of two objectives exported under a limit.
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
# Pixels scaled to [0, 1] are refused, not answered wrongly.
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
# A study of two objectives (accuracy against parameter count) exported under a
# limit. The sweep's export section and `tuner export --limit` take the best val_accuracy among
# the trials within the limit (from their Pareto front); the promotion rule records the limit.
cp "$here/testdata/tiny_tradeoff.json" "$work/"
"$tuner" sweep "$work/tiny_tradeoff.json" --executors 2 > "$work/tradeoff.out" 2>&1 ||
  { cat "$work/tradeoff.out"; fail "tuner sweep of two objectives"; }
tdb="$work/tiny_tradeoff.db"
read -r best big < <(python3 - "$tdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("""SELECT t.number, a.value, p.value FROM trials t
    JOIN trial_values a ON a.trial_id = t.trial_id AND a.objective = 0
    JOIN trial_values p ON p.trial_id = t.trial_id AND p.objective = 1
    WHERE t.state = 'COMPLETE'""").fetchall()
assert len(rows) == 3, rows
within = [r for r in rows if r[2] <= 30000]
assert 0 < len(within) < 3, rows
# The best val_accuracy; of equal ones, the one on the front (fewer parameters).
print(max(within, key=lambda r: (r[1], -r[2]))[0], [r for r in rows if r[2] > 30000][0][0])
PY
)
expect "exported trial $best as tradeoff/1 @champion" "$work/tradeoff.out"
"$tuner" registry show tradeoff/1 --registry "$reg" > "$work/show_tradeoff.out"
expect "metric: val_accuracy = .* (maximize)" "$work/show_tradeoff.out"
expect "promotion: promoted (no champion yet; meets num_params <= 30000 (" "$work/show_tradeoff.out"
expect "limit num_params <= 30000: num_params = [0-9]* (met)" "$work/show_tradeoff.out"
# The same rule from the command line: the same trial, a tie that keeps the champion.
"$tuner" export --study tiny_tradeoff --storage "$tdb" --registry "$reg" --name tradeoff \
  --promote-if-better --limit 'num_params<=30000' > "$work/export_t2.out"
expect "exported trial $best of study 'tiny_tradeoff' as tradeoff/2" "$work/export_t2.out"
expect "not promoted: .* <= .* of version 1 (maximize); meets num_params <= 30000" "$work/export_t2.out"
# The larger model, named outright, breaks the limit: exported, not promoted.
"$tuner" export --study tiny_tradeoff --storage "$tdb" --registry "$reg" --name tradeoff \
  --trial "$big" --promote-if-better --limit 'num_params<=30000' > "$work/export_t3.out"
expect "not promoted: num_params = [0-9]* breaks num_params <= 30000" "$work/export_t3.out"
"$tuner" registry show tradeoff@champion --registry "$reg" > "$work/show_champion.out"
expect "tradeoff/1 @champion" "$work/show_champion.out"
# Limits no trial meets, and malformed ones.
if "$tuner" export --study tiny_tradeoff --storage "$tdb" --registry "$reg" \
     --limit 'num_params<=100' 2> "$work/err_t1.out"; then
  fail "limits no trial meets must fail"
fi
expect "no COMPLETE trial of study 'tiny_tradeoff' meets the limits num_params <= 100 (of 3 with a value of 'val_accuracy': lowest num_params [0-9]*)" "$work/err_t1.out"
if "$tuner" export --study tiny_tradeoff --storage "$tdb" --registry "$reg" \
     --limit 'num_params<100' 2> "$work/err_t2.out"; then
  fail "a limit without <= or >= must fail"
fi
expect "\-\-limit 'num_params<100': expected one of '<=' and '>='" "$work/err_t2.out"
if "$tuner" export --study tiny_tradeoff --storage "$tdb" --registry "$reg" \
     --limit 'num_params<=1e6' --limit 'latency_ms<=2' 2> "$work/err_t3.out"; then
  fail "a second --limit must be refused, not override the first"
fi
expect "\-\-limit given more than once" "$work/err_t3.out"
python3 - "$tdb" "$big" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("""SELECT version, metric, bound, threshold, met FROM tuner_registry_promotion_limits
    WHERE model = 'tradeoff' ORDER BY version""").fetchall()
assert rows == [(1, "num_params", "max", 30000.0, 1), (2, "num_params", "max", 30000.0, 1),
                (3, "num_params", "max", 30000.0, 0)], rows
trial = db.execute("SELECT trial FROM tuner_registry_versions WHERE model = 'tradeoff' AND version = 3").fetchone()[0]
assert trial == int(sys.argv[2]), trial
PY

echo "cli registry: passed"
