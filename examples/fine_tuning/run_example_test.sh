#!/usr/bin/env bash
# The fine-tuning example, run as a user runs it: pretrain.json's tiny sweep searches an MLP's
# widths on Fashion-MNIST and registers its best trial as the champion, make_data.py writes the
# new task (footwear, 3 classes), and sweep.json fine-tunes that champion on it with the model the
# champion holds ("model": {"from": "init_from"}): every trial must start from its weights with a
# new head, its frozen layer must keep the champion's weights, and the best trial is exported;
# starting from the version's model.onnx instead gives the same trials. Then the refusals at
# load: an alias the registry lacks, the champion's 10 outputs without replace_head, a model
# declared beside "from", and a model whose outputs are not the npy labels' classes.
#   run_example_test.sh TUNER EXAMPLE_DIR
set -euo pipefail
tuner=$1
example=$2
fmnist=${TUNER_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$fmnist/t10k-images-idx3-ubyte.gz" ]; then
  echo "skipped: install Debian's dataset-fashion-mnist (or set TUNER_FASHION_MNIST_DIR)"
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_fine_tuning.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect PATTERN FILE
  grep -q -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in the output above"; }
}

cp "$example/pretrain.json" "$example/sweep.json" "$work/"
python3 "$example/make_data.py" "$work" "$fmnist"

"$tuner" sweep "$work/pretrain.json" --storage "$work/pretrain.db" > "$work/pretrain.out" 2>&1 ||
  { cat "$work/pretrain.out"; fail "tuner sweep pretrain.json"; }
expect "exported trial [0-9]* as fashion-mnist-backbone/1 @champion" "$work/pretrain.out"

"$tuner" sweep "$work/sweep.json" --storage "$work/shoes.db" > "$work/sweep.out" 2>&1 ||
  { cat "$work/sweep.out"; fail "tuner sweep sweep.json"; }
cat "$work/sweep.out"
expect "3/3 done (3 complete" "$work/sweep.out"
expect "exported trial [0-9]* as shoes/1 @champion" "$work/sweep.out"
for log in "$work"/shoes.db.logs/trial-*.log; do
  expect "job.training.init_from: started from $work/registry/fashion-mnist-backbone@champion (version 1, .*): 2 layers with weights loaded, the last one new (replace_head)" "$log"
done

# Every fine-tuned trial has the champion's searched widths and a head of 3 classes; its frozen
# layer (layers[1]) holds the champion's weights, the layers after it do not. Checkpoints:
# "TUNERCKP", u32 version, u64 length, then the model spec and the parameters
# (training/checkpoint.h).
python3 - "$work/registry/fashion-mnist-backbone/1/engine/model.ckpt" \
  "$work"/shoes.db.artifacts/shoes_fine_tuning/trial-*/model.ckpt <<'PY' || fail "frozen layer"
import json, struct, sys
def read(path):
    b = open(path, "rb").read()
    at = 20
    n, = struct.unpack_from("<Q", b, at); at += 8
    spec = json.loads(b[at:at + n]); at += n
    n, = struct.unpack_from("<Q", b, at); at += 8
    return spec, struct.unpack_from(f"<{n}f", b, at)
spec, champion = read(sys.argv[1])
widths = [spec["layers"][1]["out"], spec["layers"][3]["out"]]
assert widths[0] in (64, 128) and widths[1] in (32, 64), f"the champion's widths {widths}"
first = widths[0] * 784 + widths[0]                            # layers[1]: weight and bias
second = widths[1] * widths[0]                                 # layers[3]'s weight
for path in sys.argv[2:]:
    tuned, p = read(path)
    outs = [tuned["layers"][i]["out"] for i in (1, 3, 5)]
    assert outs == widths + [3], f"{path}: widths {outs}, not the champion's {widths} and 3"
    assert p[:first] == champion[:first], f"{path}: the frozen layer moved"
    assert p[first:first + second] != champion[first:first + second], f"{path}: layers[3] did not train"
print(f"{len(sys.argv) - 2} trials of the champion's widths {widths} kept the frozen layer's "
      f"{first} values")
PY

# The registered version's model.onnx holds the same weights: a sweep starting from it trains
# the same trials to the same values.
sed 's|"registry/fashion-mnist-backbone@champion"|"registry/fashion-mnist-backbone/1/model.onnx"|' \
  "$work/sweep.json" > "$work/onnx.json"
"$tuner" sweep "$work/onnx.json" --storage "$work/onnx.db" > "$work/onnx.out" 2>&1 ||
  { cat "$work/onnx.out"; fail "tuner sweep onnx.json"; }
expect "started from $work/registry/fashion-mnist-backbone/1/model.onnx: 2 layers" \
  "$work/onnx.db.logs/trial-0-"*.log
[ "$(grep '^best ' "$work/onnx.out")" = "$(grep '^best ' "$work/sweep.out")" ] ||
  fail "from model.onnx: $(grep '^best ' "$work/onnx.out"); from the checkpoint: $(grep '^best ' "$work/sweep.out")"

# Refused when the sweep file is loaded, before any trial runs.
sed 's/fashion-mnist-backbone@champion/fashion-mnist-backbone@best/' "$work/sweep.json" > "$work/alias.json"
if "$tuner" sweep "$work/alias.json" --storage "$work/alias.db" > "$work/alias.out" 2>&1; then
  fail "an unknown alias must be refused"
fi
expect "alias.json: job.training.init_from: .*fashion-mnist-backbone@best: model 'fashion-mnist-backbone' has no alias 'best' (its aliases: champion)" "$work/alias.out"
refused() {  # refused NAME PATTERN: sweep NAME.json is refused at load, no trial run
  if "$tuner" sweep "$work/$1.json" --storage "$work/$1.db" > "$work/$1.out" 2>&1; then
    fail "$1.json must be refused"
  fi
  expect "$2" "$work/$1.out"
  [ ! -e "$work/$1.db.logs" ] || ! ls "$work/$1.db.logs"/trial-* > /dev/null 2>&1 ||
    fail "a trial ran for the refused $1.json"
}
edit() {  # edit NAME PYTHON: NAME.json is sweep.json as `d` after PYTHON
  python3 -c "import json, sys; d = json.load(open(sys.argv[1])); $2; json.dump(d, open(sys.argv[2], 'w'))" \
    "$work/sweep.json" "$work/$1.json"
}
edit headless 'd["job"]["training"]["replace_head"] = False'
refused headless "headless.json: job.model.layers\[5\]: the model's output is \[10\], but x.npy has 3 classes: the last layer must give \[3\] (one logit per class) (the model is training.init_from's, .*; to train a new last layer for the data's classes, set training.replace_head to true)"
edit both 'd["job"]["model"]["layers"] = [{"type": "flatten"}, {"type": "linear", "out": "classes"}]'
refused both "both.json: job.model.layers: \"from\": \"init_from\" takes the whole model from training.init_from's weights: leave out \"layers\""
edit classes 'd["job"]["model"] = {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 16}, {"type": "relu"}, {"type": "linear", "out": 4}]}; t = d["job"]["training"]; [t.pop(k) for k in ("init_from", "replace_head", "freeze", "lr_factors")]; d["space"]["params"].pop("body_factor")'
refused classes "classes.json: job.model.layers\[3\]: the model's output is \[4\], but x.npy has 3 classes: the last layer must give \[3\]"
echo PASS
