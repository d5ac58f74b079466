#!/usr/bin/env bash
# An engine sweep on a folder of images (data.format "image_folder"), end to end: PNG files in
# one sub-folder per class (horizontal stripes, vertical stripes, solid; 30 each, 16x16, random
# gray levels and noise), a small CNN, 3 trials. Every trial must classify the validation split
# well above chance (1/3); the export carries the class names, which `tuner predict` prints; the
# folder's stray text file is skipped and said so in the trial's log.
#   image_folder_sweep_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/image-folder-sweep-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
export TUNER_DATA_CACHE_DIR="$work/cache"  # the decoded-image cache, kept out of $HOME
fail() { echo "FAIL: $*"; exit 1; }

python3 - "$work" <<'PY' || fail "cannot write the images"
import os, random, struct, sys, zlib
work = sys.argv[1]
def png(path, rows):
    h, w = len(rows), len(rows[0])
    raw = b"".join(b"\x00" + bytes(r) for r in rows)
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
rng = random.Random(3)
inputs = []
for cls in ["hstripes", "solid", "vstripes"]:
    os.makedirs(f"{work}/shapes/{cls}")
    for i in range(30):
        a, b = rng.randrange(0, 90), rng.randrange(160, 256)
        phase = rng.randrange(2)
        def level(y, x):
            if cls == "solid": return a if i % 2 else b
            k = y if cls == "hstripes" else x
            return a if (k // 2 + phase) % 2 else b
        rows = [[min(255, max(0, level(y, x) + rng.randrange(-20, 21))) for x in range(16)]
                for y in range(16)]
        png(f"{work}/shapes/{cls}/{i:02d}.png", rows)
        if i == 0:
            inputs.append(",".join(f"{v / 255:.6f}" for row in rows for v in row))
open(f"{work}/shapes/solid/README.txt", "w").write("not an image\n")
# tuner predict's input: the raw values the model takes, [1, 16, 16] in [0, 1].
open(f"{work}/inputs.csv", "w").write("\n".join(inputs) + "\n")
PY

cat >"$work/shapes.json" <<JSON
{"version": 1, "name": "shapes",
 "space": {"params": {"lr": {"type": "float", "low": 0.005, "high": 0.02, "log": true},
                      "width": {"type": "categorical", "choices": [8, 16]}}},
 "objective": {"metric": "val_accuracy", "direction": "maximize"},
 "sampler": {"type": "random", "seed": 1}, "budget": {"trials": 3},
 "executors": {"local": 2},
 "job": {"kind": "engine",
         "model": {"layers": [
           {"type": "conv2d", "out": "{width}", "kernel": 3, "padding": 1}, {"type": "relu"},
           {"type": "max_pool2d", "kernel": 2}, {"type": "flatten"},
           {"type": "linear", "out": "classes"}]},
         "data": {"format": "image_folder", "path": "$work/shapes", "size": [16, 16],
                  "color": "grayscale", "validation_fraction": 0.3, "split_seed": 0},
         "training": {"epochs": 10, "batch_size": 16, "lr": "{lr}", "seed": 0},
         "threads": 1, "artifacts_dir": "$work/runs"},
 "export": {"registry": "$work/registry", "name": "shapes"}}
JSON

db="$work/shapes.db"
out=$("$tuner" sweep "$work/shapes.json" --storage "$db" 2>&1) || fail "sweep exited $?: $out"
grep -q "3/3 done (3 complete" <<<"$out" || fail "sweep: $out"
grep -q "^exported trial [0-9]* as shapes/1" <<<"$out" || fail "no export: $out"
"$tuner" trials --study shapes --storage "$db" --json >"$work/trials.json" || fail "trials"
python3 - "$work/trials.json" <<'PY' || fail "the trials' accuracies: $(cat "$work/trials.json")"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 3, rows
for r in rows:
    assert r["user_attrs"]["val_accuracy"] > 0.8, r
print("val_accuracy:", ", ".join(f"{r['user_attrs']['val_accuracy']:.3f}" for r in rows))
PY
grep -q "job.data: skipped 1 file that is not .png, .jpg or .jpeg (e.g. $work/shapes/solid/README.txt)" \
  "$db".logs/trial-0-*.log || fail "no note of the skipped file in the trial's log"
predicted=$("$tuner" predict --model "$work/registry/shapes@champion" --input "$work/inputs.csv" 2>&1) ||
  fail "predict exited $?: $predicted"
grep -q "^index,predicted,p_hstripes,p_solid,p_vstripes$" <<<"$predicted" || fail "predict: $predicted"
# The three inputs are one image of each class, in class order.
[ "$(sed -n 's/^\([0-9]\),\([a-z]*\),.*/\1 \2/p' <<<"$predicted" | grep -c "^0 hstripes$\|^1 solid$\|^2 vstripes$")" -eq 3 ] ||
  fail "predict names the classes of the three images: $predicted"
echo "PASS"
