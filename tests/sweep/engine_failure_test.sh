#!/usr/bin/env bash
# Why an engine trial failed, as a user meets it: a sweep whose data directory
# holds an IDX file with a bad magic number prints each FAIL trial with that cause on the
# console, and stores it as the trial's fail_reason (Optuna's system attribute), not only
# "exited with code 1"; a truncated IDX file gives `tuner trial` one last "error: ... truncated"
# line. A model that cannot fit the data (3 outputs for 10 classes, a categorical choice that is
# no layer) is refused when the sweep file is loaded. Needs no Fashion-MNIST: the data are made.
#   engine_failure_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/engine-failure-$$"
rm -rf "$work"; mkdir -p "$work/bad" "$work/short"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 - "$work" <<'PY' || fail "cannot write the IDX files"
import gzip, struct, sys
work = sys.argv[1]
def idx(path, magic, dims, body):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + body)
for d in ("bad", "short"):
    for split in ("train", "t10k"):
        idx(f"{work}/{d}/{split}-labels-idx1-ubyte.gz", 0x801, [60000], bytes(60000))
# Labels where the images should be: magic 0x00000801, not 0x00000803.
idx(f"{work}/bad/train-images-idx3-ubyte.gz", 0x801, [60000, 28, 28], b"")
idx(f"{work}/bad/t10k-images-idx3-ubyte.gz", 0x801, [10000, 28, 28], b"")
# A header that promises 60000 images, followed by 10.
idx(f"{work}/short/train-images-idx3-ubyte.gz", 0x803, [60000, 28, 28], bytes(10 * 784))
idx(f"{work}/short/t10k-images-idx3-ubyte.gz", 0x803, [10000, 28, 28], bytes(10 * 784))
PY

# sweep NAME DATA_DIR LAST_LAYERS [PARAMS]: an engine sweep file of 2 trials.
sweep() {
  cat >"$work/$1.json" <<JSON
{"version": 1, "name": "$1",
 "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.01}${4:-}}},
 "objective": {"metric": "val_accuracy", "direction": "maximize"}, "budget": {"trials": 2},
 "executors": {"local": 1},
 "job": {"kind": "engine",
         "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, $3]},
         "data": {"dataset": "fashion-mnist", "dir": "$2", "train": 100, "validation": 50},
         "training": {"epochs": 1, "batch_size": 50, "lr": "{lr}"}}}
JSON
}

# The FAIL reason names the file and its bad magic number, on the console and in the database.
sweep magic "$work/bad" '{"type": "linear", "out": 10}'
out=$(timeout 120 "$tuner" sweep "$work/magic.json" --storage "$work/magic.db" 2>&1); rc=$?
[ $rc != 124 ] || fail "the sweep did not end: $out"
grep -q "trial 0 FAIL: trial 0: job.data: $work/bad/train-images-idx3-ubyte.gz: bad magic number 0x00000801 (an IDX image file starts with 0x00000803)" <<<"$out" ||
  fail "the console does not say why trial 0 failed: $out"
python3 - "$work/magic.db" <<'PY' || fail "fail_reason"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT t.number, a.value_json FROM trials t JOIN trial_system_attributes a "
                  "ON a.trial_id = t.trial_id WHERE a.key = 'fail_reason' ORDER BY t.number").fetchall()
assert len(rows) == 2, rows
for number, reason in rows:
    assert "train-images-idx3-ubyte.gz: bad magic number 0x00000801" in reason, reason
    assert "(exited with code 1)" in reason, reason
PY

# A truncated file: `tuner trial` ends with one "error: " line that names it.
job=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["job"] | {"objective_metric": "val_accuracy"}))' "$work/magic.json" |
      sed "s#$work/bad#$work/short#")
TUNER_PARAMS='{"lr": 0.005}' TUNER_TRIAL_NUMBER=4 "$tuner" trial --engine-job "$job" 2>"$work/trial.err"; rc=$?
[ $rc = 1 ] || fail "tuner trial on a truncated file exited $rc: $(cat "$work/trial.err")"
last=$(tail -1 "$work/trial.err")
grep -q "^error: trial 4: job.data: $work/short/train-images-idx3-ubyte.gz: truncated: expected 117600 bytes of 150 images of 28x28 (the header promises 60000), the file ends after 7840$" <<<"$last" ||
  fail "tuner trial's last line: $last"

# Refused at load, before a study is made: 3 outputs for 10 classes; a choice that is no layer.
sweep outputs "$work/bad" '{"type": "linear", "out": 3}'
out=$("$tuner" sweep "$work/outputs.json" --storage "$work/outputs.db" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "outputs.json: job.model.layers\[1\]: the model's output is \[3\], but fashion-mnist has 10 classes" <<<"$out" ||
  fail "3 outputs for 10 classes: rc $rc, $out"
sweep choice "$work/bad" '{"type": "linear", "out": 32}, {"type": "{act}"}, {"type": "linear", "out": 10}' \
  ', "act": {"type": "categorical", "choices": ["relu", "swish"]}'
out=$("$tuner" sweep "$work/choice.json" --storage "$work/choice.db" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "choice.json: job.model.layers\[2\].type: unknown layer \"swish\".*every trial with act = \"swish\" would fail" <<<"$out" ||
  fail "a choice that is no layer: rc $rc, $out"
[ ! -e "$work/outputs.db" ] && [ ! -e "$work/choice.db" ] || fail "a refused sweep made its database"
echo "PASS"
