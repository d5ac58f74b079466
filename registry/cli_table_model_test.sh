#!/usr/bin/env bash
# A model the engine trained on a CSV file, as a user meets it: tuner sweep on a generated table
# (numeric and categorical columns, missing values filled with data.missing "mean", string
# labels), the export of its best trial to a registry, and tuner predict on the test file's rows
# by column name, which must print the labels and the accuracy the trial recorded. Also the
# refusals: a missing feature column, idx-style --labels, a file that is not a table. Then the
# same rows served by tuner serve-model as MLflow's data frames by column name, which must answer
# the labels tuner predict printed, and refuse a record without a feature column.
#   cli_table_model_test.sh TUNER
set -euo pipefail
tuner=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_cli_table.XXXXXX")
server=""
trap '[ -n "$server" ] && kill -9 "$server" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect PATTERN FILE
  grep -q -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in the output above"; }
}

# Three classes told apart by x1 and x2 (different scales), a categorical column, noise; every
# 11th x1 and every 13th color missing.
table() {  # table SEED ROWS
  awk -v seed="$1" -v n="$2" 'BEGIN {
    srand(seed); print "x1,color,x2,noise,kind"
    split("alpha beta gamma", names, " "); split("red green blue", colors, " ")
    for (i = 0; i < n; i++) {
      k = i % 3
      x1 = (i % 11 == 4) ? "NA" : sprintf("%.4f", k + 1.6 * (rand() - 0.5))
      color = (i % 13 == 6) ? "" : colors[1 + int(rand() * 3)]
      printf "%s,%s,%.2f,%.4f,%s\n", x1, color, 100 * k + 160 * (rand() - 0.5), rand(), names[k + 1]
    }
  }'
}
table 1 240 > "$work/train.csv"
table 2 60 > "$work/test.csv"
cat > "$work/table_sweep.json" <<JSON
{
  "name": "table_sweep",
  "space": {"params": {"width": {"type": "categorical", "choices": [8, 16]}}},
  "objective": {"metric": "val_accuracy", "direction": "maximize"},
  "sampler": {"type": "grid"},
  "budget": {"trials": 2},
  "job": {
    "kind": "engine",
    "model": {"layers": [{"type": "linear", "out": "{width}"}, {"type": "relu"},
                         {"type": "linear", "out": "classes"}]},
    "data": {"format": "csv", "dir": "$work", "train": "train.csv", "test": "test.csv",
             "label": "kind", "missing": "mean", "validation_fraction": 0.25, "split_seed": 1},
    "training": {"epochs": 8, "batch_size": 16, "optimizer": "adam", "lr": 0.02, "seed": 1}
  },
  "export": {"registry": "registry", "name": "table"}
}
JSON
"$tuner" sweep "$work/table_sweep.json" --executors 1 > "$work/sweep.out" 2>&1 ||
  { cat "$work/sweep.out"; fail "tuner sweep"; }
reg="$work/registry"
[ -f "$reg/table/1/engine/preprocessing.json" ] || { cat "$work/sweep.out"; fail "no export"; }
expect '"labels"' "$reg/table/1/engine/preprocessing.json"
expect '"categories"' "$reg/table/1/engine/preprocessing.json"
expect "tuner_format_version: 3" "$reg/table/1/MLmodel"

# The test file's rows, columns by name in another order, one more column: the recorded accuracy.
awk -F, 'BEGIN { OFS = "," } { print $5, "extra" NR, $3, $1, $4, $2 }' "$work/test.csv" > "$work/rows.csv"
"$tuner" predict --model "$reg/table@champion" --input "$work/rows.csv" \
  --output "$work/pred.csv" > "$work/predict.out"
cat "$work/predict.out"
expect "predicted 60 samples" "$work/predict.out"
expect "accuracy 0\.[0-9]* ([0-9]*/60)\|accuracy 1 (60/60)" "$work/predict.out"
expect "(the same)" "$work/predict.out"
head -1 "$work/pred.csv" | grep -q "^index,predicted,label,p_alpha,p_beta,p_gamma$" ||
  fail "pred.csv header: $(head -1 "$work/pred.csv")"
sed -n 2p "$work/pred.csv" | grep -q "^0,\(alpha\|beta\|gamma\),alpha,0\.*[0-9]" ||
  fail "pred.csv row: $(sed -n 2p "$work/pred.csv")"

# Refusals.
cut -d, -f1,2,4,5 "$work/test.csv" > "$work/no_x2.csv"
if "$tuner" predict --model "$reg/table@champion" --input "$work/no_x2.csv" 2> "$work/err1.out"; then
  fail "a missing feature column must be refused"
fi
expect 'the header lacks the feature column "x2" of the model' "$work/err1.out"
if "$tuner" predict --model "$reg/table@champion" --input "$work/test.csv" --labels x \
  2> "$work/err2.out" > /dev/null; then
  fail "--labels must be refused for a table's model"
fi
expect 'a table.s labels are its column "kind"' "$work/err2.out"
if "$tuner" predict --model "$reg/table@champion" --input "$work/images.gz" 2> "$work/err3.out"; then
  fail "a file that is not a table must be refused"
fi
expect "was trained on a table: give its rows as a CSV or TSV file" "$work/err3.out"
# Served: the rows as dataframe_records (numbers as numbers, NA and "" as null), by column name.
"$tuner" serve-model --model "$reg/table@champion" --port 0 > "$work/server.out" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q "^serving " "$work/server.out" && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.out"; fail "tuner serve-model exited"; }
  sleep 0.1
done
url=$(sed -n 's/^serving .* on \(http:[^ ,]*\).*/\1/p' "$work/server.out")
[ -n "$url" ] || { cat "$work/server.out"; fail "no 'serving' line"; }
python3 - "$work/rows.csv" > "$work/records.json" <<'PY'
import csv, json, sys
def value(v):
    if v in ("", "NA"):
        return None
    try:
        return float(v)
    except ValueError:
        return v
rows = list(csv.DictReader(open(sys.argv[1])))
print(json.dumps({"dataframe_records": [{k: value(v) for k, v in r.items()} for r in rows]}))
PY
curl -s "$url/invocations" -H 'Content-Type: application/json' -d @"$work/records.json" \
  > "$work/served.json" || fail "curl /invocations"
python3 - "$work/served.json" "$work/pred.csv" <<'PY' || fail "served labels differ from tuner predict's"
import csv, json, math, sys
answer = json.load(open(sys.argv[1]))
predicted = [r["predicted"] for r in csv.DictReader(open(sys.argv[2]))]
served = answer["predictions"]
assert len(served) == len(predicted) == 60, (len(served), len(predicted), answer)
for i, (s, p) in enumerate(zip(served, predicted)):
    assert s["label"] == p, (i, s, p)
    assert abs(sum(s["probabilities"]) - 1) < 1e-4, s
PY
curl -s "$url/invocations" -H 'Content-Type: application/json' \
  -d '{"dataframe_split": {"columns": ["x1", "color"], "data": [[1, "red"]]}}' \
  -w '%{http_code}' > "$work/refused.json"
expect 'no feature column \\"x2\\".*400$' "$work/refused.json"
kill -TERM "$server"
wait "$server" || fail "tuner serve-model exited $? after SIGTERM"
server=""
echo "ok"
