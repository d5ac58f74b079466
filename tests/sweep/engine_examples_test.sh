#!/usr/bin/env bash
# The engine sweep examples, run end to end on a small budget: each example file is shrunk (a
# 1,500-image slice, 2 epochs, 3 trials, one thread) into a temporary copy, run with
# `tuner sweep`, and its best trial must have a model file and a test accuracy; `tuner report`
# must write the report.
#   engine_examples_test.sh TUNER_BINARY REPO_ROOT WORK_DIR
set -uo pipefail
tuner="$1"; root="$2"; work="$3/engine-examples-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for name in fashion_mnist_mlp fashion_mnist_cnn; do
  python3 - "$root/examples/sweeps/$name.json" "$work/$name.json" <<'PY' || fail "cannot shrink $name"
import json, sys
sweep = json.load(open(sys.argv[1]))
job = sweep["job"]
job["data"].update({"train": 1200, "validation": 300, "test": 300})
job["training"]["epochs"] = 2
job["threads"] = 1
sweep["budget"] = {"trials": 3}
sweep["executors"] = {"local": 2}
if "max_resource" in sweep.get("scheduler", {}):
    sweep["scheduler"]["max_resource"] = 2  # the epochs
json.dump(sweep, open(sys.argv[2], "w"), indent=1)
PY
  db="$work/$name.db"
  out=$("$tuner" sweep "$work/$name.json" --storage "$db" 2>&1) || fail "$name: sweep exited $?: $out"
  grep -q "3/3 done" <<<"$out" || fail "$name: $out"
  best=$("$tuner" best --study "$name" --storage "$db" 2>&1) || fail "$name: best: $best"
  grep -q "test_accuracy: 0\.[0-9]" <<<"$best" || fail "$name: no test accuracy: $best"
  model=$(sed -n 's/^  model: //p' <<<"$best")
  [ -f "$model" ] || fail "$name: no model file: $best"
  "$tuner" report --study "$name" --storage "$db" --out "$work/$name.html" >/dev/null ||
    fail "$name: report"
  [ -s "$work/$name.html" ] || fail "$name: empty report"
done
echo "PASS"
