#!/usr/bin/env bash
# The image-folder example, run as a user runs it: make_data.py draws the images, sweep.json
# tunes a small CNN on them with augmentation (random crop and flip searched per trial) and
# exports the best trial; every trial but the first reads the decoded images from the cache
# (here in the test's own folder) instead of decoding them; `tuner predict` answers on an .npy of new images (with their
# labels: the accuracy) and names the file of a wrong shape or type. Then the refusals at load:
# a negative padding, and augmentation of a table.
#   run_example_test.sh TUNER EXAMPLE_DIR
set -euo pipefail
tuner=$1
example=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_image_folder_augment.XXXXXX")
trap 'rm -rf "$work"' EXIT
export TUNER_DATA_CACHE_DIR="$work/cache"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect PATTERN FILE
  grep -q -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in the output above"; }
}

cp "$example/sweep.json" "$work/"
python3 "$example/make_data.py" "$work"

"$tuner" sweep "$work/sweep.json" --storage "$work/stripes.db" > "$work/sweep.out" 2>&1 ||
  { cat "$work/sweep.out"; fail "tuner sweep sweep.json"; }
cat "$work/sweep.out"
expect "3/3 done (3 complete" "$work/sweep.out"
expect "exported trial [0-9]* as stripes/1 @champion" "$work/sweep.out"

# One trial decoded the images; the others read them from the cache, which wrote nothing into
# the data's folder.
cached=$(grep -l "job.data: decoded images read from $work/cache/" \
  "$work"/stripes.db.logs/trial-*.log | wc -l)
[ "$cached" -eq 2 ] || { tail -n 5 "$work"/stripes.db.logs/trial-*.log; fail "$cached trials read the cache, not 2"; }
[ -z "$(find "$work/stripes" -name '.*')" ] || fail "the cache wrote into $work/stripes"

# New images as an .npy array [N, 3, 16, 16] of values in [0, 1], labels beside it.
"$tuner" predict --model "$work/registry/stripes@champion" --input "$work/check.npy" \
  --labels "$work/check_labels.npy" --output "$work/predicted.csv" > "$work/predict.out" 2>&1 ||
  { cat "$work/predict.out"; fail "tuner predict check.npy"; }
cat "$work/predict.out"
expect "^predicted 24 samples" "$work/predict.out"
expect "^index,predicted,label,p_diagonal,p_horizontal,p_vertical$" "$work/predicted.csv"
accuracy=$(sed -n 's/^accuracy \([0-9.e-]*\) (.*/\1/p' "$work/predict.out")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.6 else 1)" "${accuracy:-0}" ||
  fail "accuracy ${accuracy:-none} <= 0.6 (chance is 1/3)"

# An .npy of another shape, and one of booleans: refused naming the file.
python3 - "$work" <<'PY'
import struct, sys
def npy(path, descr, shape, data):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)
npy(f"{sys.argv[1]}/gray.npy", "<f4", (2, 1, 16, 16), bytes(2 * 256 * 4))
npy(f"{sys.argv[1]}/bools.npy", "|b1", (2, 3, 16, 16), bytes(2 * 768))
PY
if "$tuner" predict --model "$work/registry/stripes@champion" --input "$work/gray.npy" > "$work/gray.out" 2>&1; then
  fail "an .npy of another shape must be refused"
fi
expect "$work/gray.npy: an array of shape \[2, 1, 16, 16\], the model takes samples of \[3, 16, 16\]" "$work/gray.out"
if "$tuner" predict --model "$work/registry/stripes@champion" --input "$work/bools.npy" > "$work/bools.out" 2>&1; then
  fail "an .npy of booleans must be refused"
fi
expect "$work/bools.npy: elements of type |b1, the model takes numbers" "$work/bools.out"

# Refused when the sweep file is loaded, naming the member.
sed 's/"padding": "{padding}"/"padding": -1/' "$work/sweep.json" > "$work/negative.json"
if "$tuner" sweep "$work/negative.json" --storage "$work/negative.db" > "$work/negative.out" 2>&1; then
  fail "a negative padding must be refused"
fi
expect "job.data.augment.random_crop.padding: expected an integer >= 0, got -1" "$work/negative.out"
echo "ok"
