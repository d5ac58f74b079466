#!/usr/bin/env bash
# The fine-tuning example, run as a user runs it: pretrain.json registers a Fashion-MNIST model,
# make_data.py writes the new task (footwear, 3 classes), and sweep.json fine-tunes the registered
# champion on it: every trial must start from its weights with a new head, its frozen layer must
# keep the champion's weights, and the best trial is exported; starting from the version's
# model.onnx instead gives the same trials. Then the refusals at load: an alias the registry
# lacks, and a model whose layers differ from the champion's.
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

# The frozen layer (layers[1]) of every fine-tuned trial holds the champion's weights; the
# layers after it do not. Checkpoints: "TUNERCKP", u32 version, u64 length, then the model spec
# and the parameters (training/checkpoint.h).
python3 - "$work/registry/fashion-mnist-backbone/1/engine/model.ckpt" \
  "$work"/shoes.db.artifacts/shoes_fine_tuning/trial-*/model.ckpt <<'PY' || fail "frozen layer"
import struct, sys
def params(path):
    b = open(path, "rb").read()
    at = 20
    n, = struct.unpack_from("<Q", b, at); at += 8 + n          # the model spec
    n, = struct.unpack_from("<Q", b, at); at += 8
    return struct.unpack_from(f"<{n}f", b, at)
first = 128 * 784 + 128                                        # layers[1]: weight and bias
champion = params(sys.argv[1])
for path in sys.argv[2:]:
    p = params(path)
    assert p[:first] == champion[:first], f"{path}: the frozen layer moved"
    assert p[first:first + 64 * 128] != champion[first:first + 64 * 128], f"{path}: layers[3] did not train"
print(f"{len(sys.argv) - 2} trials kept the frozen layer's {first} values")
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
sed 's/"out": 128/"out": 96/' "$work/sweep.json" > "$work/wider.json"
if "$tuner" sweep "$work/wider.json" --storage "$work/wider.db" > "$work/wider.out" 2>&1; then
  fail "a model of other layers must be refused"
fi
expect "wider.json: job.training.init_from: .*: layer with weights 0 does not match: the model's layers\[1\] (linear) has weight \[96, 784\], the source's layers\[1\] has weight \[128, 784\]" "$work/wider.out"
[ ! -e "$work/wider.db.logs" ] || ! ls "$work/wider.db.logs"/trial-* > /dev/null 2>&1 ||
  fail "a trial ran for a refused sweep file"
echo PASS
