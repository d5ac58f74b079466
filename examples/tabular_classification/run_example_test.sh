#!/usr/bin/env bash
# The tabular classification example, run as a user runs it: tuner sweep on a copy of this folder
# (a CSV with a categorical column and missing ages), then tuner predict with the exported model
# on customers.csv (labels by name, accuracy well above the majority class's share), the same
# rows served by tuner serve-model as dataframe_records with the region as a string, answered
# with tuner predict's labels, and tuner drift of the server's request log against the training
# file itself, encoded by the model's columns. With SWEEP sweep_embedding.json the region is
# embedded (data.embedding) instead: one feature, its index, served and drift-checked by name.
#   run_example_test.sh TUNER EXAMPLE_DIR [SWEEP]
set -euo pipefail
tuner=$1
example=$2
sweep=${3:-sweep.json}
name=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["export"]["name"])' \
  "$example/$sweep")
region_feature="region=west"
[ "$sweep" = sweep.json ] || region_feature="region"
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_tabular_classification.XXXXXX")
server=""
trap '[ -n "$server" ] && kill -9 "$server" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cp "$example/$sweep" "$example/customers.csv" "$work/"
"$tuner" sweep "$work/$sweep" --storage "$work/customers.db" > "$work/sweep.out" 2>&1 ||
  { cat "$work/sweep.out"; fail "tuner sweep"; }
cat "$work/sweep.out"
grep -q "4/4 done (4 complete" "$work/sweep.out" || fail "not every trial completed"
grep -q "^exported trial [0-9]* as $name/1" "$work/sweep.out" || fail "no export"

"$tuner" predict --model "$work/registry/$name@champion" --input "$work/customers.csv" \
  --output "$work/pred.csv" > "$work/predict.out"
cat "$work/predict.out"
[ "$(head -1 "$work/pred.csv")" = "index,predicted,label,p_basic,p_plus,p_premium" ] ||
  fail "pred.csv header: $(head -1 "$work/pred.csv")"
python3 - "$work/predict.out" <<'PY' || fail "accuracy"
import re, sys
acc = float(re.search(r"^accuracy ([0-9.]+) ", open(sys.argv[1]).read(), re.M).group(1))
assert acc > 0.7, f"accuracy {acc}: the majority class alone gives 0.415"
PY

"$tuner" serve-model --model "$work/registry/$name@champion" --port 0 \
  --log-dir "$work/logs" > "$work/server.out" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q "^serving " "$work/server.out" && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.out"; fail "tuner serve-model exited"; }
  sleep 0.1
done
url=$(sed -n 's/^serving .* on \(http:[^ ,]*\).*/\1/p' "$work/server.out")
[ -n "$url" ] || { cat "$work/server.out"; fail "no 'serving' line"; }
python3 - "$work/customers.csv" > "$work/records.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))[:40]
records = [{"region": r["region"], "visits": int(r["visits"]), "income": float(r["income"]),
            "age": float(r["age"]) if r["age"] else None} for r in rows]
print(json.dumps({"dataframe_records": records}))
PY
curl -s "$url/invocations" -H 'Content-Type: application/json' -d @"$work/records.json" \
  > "$work/served.json" || fail "curl /invocations"
python3 - "$work/served.json" "$work/pred.csv" <<'PY' || fail "served labels differ from tuner predict's: $(cat "$work/served.json")"
import csv, json, sys
served = [p["label"] for p in json.load(open(sys.argv[1]))["predictions"]]
predicted = [r["predicted"] for r in csv.DictReader(open(sys.argv[2]))][:40]
assert served == predicted, (served, predicted)
PY
kill -TERM "$server"
wait "$server" || fail "tuner serve-model exited $? after SIGTERM"
server=""

status=0
"$tuner" drift --reference "$work/customers.csv" --current "$work/logs" \
  --model "$work/registry/$name@champion" > "$work/drift.out" 2>&1 || status=$?
cat "$work/drift.out"
[ "$status" = 0 ] || [ "$status" = 3 ] || fail "tuner drift exited $status"
grep -q "^$region_feature " "$work/drift.out" ||
  fail "no feature $region_feature in the drift table"
grep -q "reference: csv $work/customers.csv: 600 samples" "$work/drift.out" ||
  fail "the reference is not the 600 rows of customers.csv"
echo PASS
