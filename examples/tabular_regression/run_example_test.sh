#!/usr/bin/env bash
# The tabular regression example, run as a user runs it: tuner sweep on a copy of this folder,
# then tuner predict with the exported model on houses.csv, whose RMSE must be well below the
# price's standard deviation (the printed values in the price's own units), and the same rows
# served by tuner serve-model as a dataframe_split, answered with tuner predict's numbers.
#   run_example_test.sh TUNER EXAMPLE_DIR
set -euo pipefail
tuner=$1
example=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_tabular_regression.XXXXXX")
server=""
trap '[ -n "$server" ] && kill -9 "$server" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cp "$example/sweep.json" "$example/houses.csv" "$work/"
"$tuner" sweep "$work/sweep.json" --storage "$work/houses.db" > "$work/sweep.out" 2>&1 ||
  { cat "$work/sweep.out"; fail "tuner sweep"; }
cat "$work/sweep.out"
grep -q "4/4 done (4 complete" "$work/sweep.out" || fail "not every trial completed"
grep -q "^exported trial [0-9]* as houses/1" "$work/sweep.out" || fail "no export"
grep -q '"task": "regression"' "$work/registry/houses/1/engine/preprocessing.json" ||
  fail "the export does not say it is a regression"

"$tuner" predict --model "$work/registry/houses@champion" --input "$work/houses.csv" \
  --output "$work/pred.csv" > "$work/predict.out"
cat "$work/predict.out"
[ "$(head -1 "$work/pred.csv")" = "index,predicted,label" ] ||
  fail "pred.csv header: $(head -1 "$work/pred.csv")"
python3 - "$work/houses.csv" "$work/pred.csv" "$work/predict.out" <<'PY' || fail "predictions"
import csv, math, re, statistics, sys
prices = [float(r["price"]) for r in csv.DictReader(open(sys.argv[1]))]
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == len(prices), (len(rows), len(prices))
errors = [float(r["predicted"]) - p for r, p in zip(rows, prices)]
rmse = math.sqrt(sum(e * e for e in errors) / len(errors))
spread = statistics.pstdev(prices)
assert rmse < 0.5 * spread, f"rmse {rmse} against the prices' standard deviation {spread}"
printed = float(re.search(r"^rmse ([0-9.e+-]+),", open(sys.argv[3]).read(), re.M).group(1))
assert abs(printed - rmse) <= 1e-3 * rmse + 1e-3, (printed, rmse)
print(f"rmse {rmse:.3f}, the prices' standard deviation {spread:.3f}")
PY

"$tuner" serve-model --model "$work/registry/houses@champion" --port 0 > "$work/server.out" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q "^serving " "$work/server.out" && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.out"; fail "tuner serve-model exited"; }
  sleep 0.1
done
url=$(sed -n 's/^serving .* on \(http:[^ ,]*\).*/\1/p' "$work/server.out")
[ -n "$url" ] || { cat "$work/server.out"; fail "no 'serving' line"; }
python3 - "$work/houses.csv" > "$work/split.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))[:20]
columns = ["district", "age", "area", "rooms"]  # by name, in another order; no price
data = [[r["district"]] + [float(r[c]) for c in columns[1:]] for r in rows]
print(json.dumps({"dataframe_split": {"columns": columns, "data": data}}))
PY
curl -s "$url/invocations" -H 'Content-Type: application/json' -d @"$work/split.json" \
  > "$work/served.json" || fail "curl /invocations"
python3 - "$work/served.json" "$work/pred.csv" <<'PY' || fail "served values differ from tuner predict's: $(cat "$work/served.json")"
import csv, json, sys
served = json.load(open(sys.argv[1]))["predictions"]
predicted = [float(r["predicted"]) for r in csv.DictReader(open(sys.argv[2]))][:20]
assert len(served) == 20 and all(isinstance(v, float) for v in served), served
for s, p in zip(served, predicted):
    assert abs(s - p) <= 1e-4 * abs(p) + 1e-3, (s, p)
PY
kill -TERM "$server"
wait "$server" || fail "tuner serve-model exited $? after SIGTERM"
server=""
echo PASS
