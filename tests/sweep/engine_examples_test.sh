#!/usr/bin/env bash
# The engine sweep examples, run end to end on a small budget: each example file is shrunk (a
# 1,500-image slice, 2 epochs, 3 trials, one thread) into a temporary copy, run with
# `tuner sweep`, and its best trial must have a model file and a test accuracy (the example of
# several objectives: its Pareto front, marked by `tuner trials`, sized by `tuner status`);
# `tuner report` must write the report.
#   engine_examples_test.sh TUNER_BINARY REPO_ROOT WORK_DIR
set -uo pipefail
tuner="$1"; root="$2"; work="$3/engine-examples-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for name in fashion_mnist_mlp fashion_mnist_cnn fashion_mnist_tradeoff; do
  python3 - "$root/examples/sweeps/$name.json" "$work/$name.json" <<'PY' || fail "cannot shrink $name"
import json, sys
sweep = json.load(open(sys.argv[1]))
job = sweep["job"]
job["data"].update({"train": 1200, "validation": 300, "test": 300})
job["training"]["epochs"] = 2
job["threads"] = 1
sweep["budget"] = {"trials": 3}
sweep["executors"] = {"local": 2}
if "limits" in sweep.get("export", {}):
    # Latencies move with the machine: a limit every trial meets, to run the export's rule.
    for limit in sweep["export"]["limits"]:
        limit["max"] = 1e9
if "max_resource" in sweep.get("scheduler", {}):
    sweep["scheduler"]["max_resource"] = 2  # the epochs
json.dump(sweep, open(sys.argv[2], "w"), indent=1)
PY
  db="$work/$name.db"
  out=$("$tuner" sweep "$work/$name.json" --storage "$db" 2>&1) || fail "$name: sweep exited $?: $out"
  grep -q "3/3 done" <<<"$out" || fail "$name: $out"
  if [ "$name" = fashion_mnist_tradeoff ]; then
    grep -q "^Pareto front: [1-3] of 3 COMPLETE trials" <<<"$out" || fail "$name: no front: $out"
    # The champion: the most accurate trial of the front within the latency limit.
    grep -q "^exported trial [0-9]* as fashion-mnist-tradeoff/1" <<<"$out" || fail "$name: no export: $out"
    front=$("$tuner" best --study "$name" --storage "$db" 2>&1) || fail "$name: best: $front"
    grep -q "^Pareto front of study '$name' (maximize, minimize, minimize): [1-3] of 3" <<<"$front" ||
      fail "$name: best: $front"
    status=$("$tuner" status --storage "$db") || fail "$name: status: $status"
    grep -q "3 objectives, Pareto front [1-3] trials\?, hypervolume [0-9]" <<<"$status" ||
      fail "$name: status: $status"
    "$tuner" trials --study "$name" --storage "$db" --json >"$work/$name.trials" || fail "$name: trials"
    python3 - "$work/$name.trials" <<'PY' || fail "$name: the trials' values: $(cat "$work/$name.trials")"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 3, rows
for r in rows:
    a = r["user_attrs"]
    # The values are the objectives' final metrics; the model's figures came with them.
    assert r["values"] == [a["val_accuracy"], a["latency_ms"], a["num_params"]], r
    assert a["train_flops_per_sample"] > 0 and a["checkpoint_bytes"] > 4 * a["num_params"], a
    assert a["latency_ms"] > 0 and a["latency_ms_per_sample"] > 0, a
assert any(r["front"] for r in rows), rows
PY
    # The champion under a latency limit that binds: set it between two trials' latencies, under
    # the most accurate trial's, and the export must pick the most accurate trial within it (any
    # of them on a tie); when no trial is faster than that one, it must refuse and say which limit
    # no trial meets. The JSON's values have 6 digits: the limit stays clear of them.
    read -r limit expected < <(python3 - "$work/$name.trials" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
acc = lambda r: r["user_attrs"]["val_accuracy"]
lat = lambda r: r["user_attrs"]["latency_ms"]
top = max(rows, key=lambda r: (acc(r), -lat(r)))
upper = lat(top)
for l in sorted({lat(r) for r in rows if lat(r) < lat(top)}, reverse=True):
    if upper - l > 1e-4 * upper:
        limit = (l + upper) / 2
        within = [r for r in rows if lat(r) <= limit]
        best = max(acc(r) for r in within)
        print(limit, ",".join(str(r["number"]) for r in within if acc(r) == best))
        break
    upper = l
else:
    print(min(lat(r) for r in rows) / 2, "none")
PY
)
    [ -n "$limit" ] || fail "$name: no latency limit computed"
    exported=$("$tuner" export --study "$name" --storage "$db" --registry "$work/limited" \
      --name limited --limit "latency_ms<=$limit" 2>&1)
    if [ "$expected" = none ]; then
      grep -q "meets the limits latency_ms <= .*lowest latency_ms" <<<"$exported" ||
        fail "$name: export under a limit no trial meets: $exported"
    else
      picked=$(sed -n 's/^exported trial \([0-9]*\) of study.*/\1/p' <<<"$exported")
      [ -n "$picked" ] && grep -qw "$picked" <<<"${expected//,/ }" ||
        fail "$name: export under latency_ms <= $limit should pick one of trials $expected: $exported"
    fi
    "$tuner" report --study "$name" --storage "$db" --out "$work/$name.html" >/dev/null ||
      fail "$name: report"
    [ -s "$work/$name.html" ] || fail "$name: empty report"
    # Its Pareto section: a plot per pair of the three objectives, and the hypervolume.
    for id in pareto-0-1 pareto-0-2 pareto-1-2 hypervolume; do
      grep -q "id=\"$id\" data-plot=" "$work/$name.html" || fail "$name: no plot $id in the report"
    done
    grep -q ">val_accuracy (maximize)</text>" "$work/$name.html" || fail "$name: axes not named"
    # The summary names the trial the sweep exported, by the export rule, ringed in the plots.
    champion=$(sed -n 's/^exported trial \([0-9]*\) as fashion-mnist-tradeoff.*/\1/p' <<<"$out")
    grep -q "<p id=\"export-pick\">The sweep's export rule (the highest val_accuracy with latency_ms &lt;= 1e+09) picks trial $champion," "$work/$name.html" ||
      fail "$name: the report does not name the exported trial $champion"
    grep -q "class=\"pick\"" "$work/$name.html" || fail "$name: the export's pick is not ringed"
    continue
  fi
  best=$("$tuner" best --study "$name" --storage "$db" 2>&1) || fail "$name: best: $best"
  grep -q "test_accuracy: 0\.[0-9]" <<<"$best" || fail "$name: no test accuracy: $best"
  model=$(sed -n 's/^  model: //p' <<<"$best")
  [ -f "$model" ] || fail "$name: no model file: $best"
  "$tuner" report --study "$name" --storage "$db" --out "$work/$name.html" >/dev/null ||
    fail "$name: report"
  [ -s "$work/$name.html" ] || fail "$name: empty report"
done
echo "PASS"
