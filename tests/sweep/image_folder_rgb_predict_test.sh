#!/usr/bin/env bash
# An RGB image folder end to end: PNG files of three colors (reddish, greenish, bluish; noisy,
# of several sizes) in one sub-folder per class, a sweep of 2 trials, the best model exported
# with its per-channel normalization, then `tuner predict` on a fresh folder of the same layout
# (its sub-folders' names are the true labels: accuracy > 0.8) and on one PNG file.
#   image_folder_rgb_predict_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/image-folder-rgb-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
export TUNER_DATA_CACHE_DIR="$work/cache"  # the decoded-image cache, kept out of $HOME
fail() { echo "FAIL: $*"; exit 1; }

python3 - "$work" <<'PY' || fail "cannot write the images"
import os, random, struct, sys, zlib
work = sys.argv[1]
def png(path, pixels):  # pixels: rows of (r, g, b)
    h, w = len(pixels), len(pixels[0])
    raw = b"".join(b"\x00" + bytes(v for p in row for v in p) for row in pixels)
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
base = {"blue": (40, 60, 200), "green": (50, 190, 60), "red": (210, 50, 40)}
def folder(name, count, seed):
    rng = random.Random(seed)
    for cls, color in base.items():
        os.makedirs(f"{work}/{name}/{cls}")
        for i in range(count):
            h, w = rng.choice([(8, 8), (12, 10), (6, 9)])
            pixels = [[tuple(min(255, max(0, c + rng.randrange(-40, 41))) for c in color)
                       for _ in range(w)] for _ in range(h)]
            png(f"{work}/{name}/{cls}/{i:02d}.png", pixels)
folder("colors", 20, 1)
folder("check", 10, 2)
PY

cat >"$work/colors.json" <<JSON
{"version": 1, "name": "colors",
 "space": {"params": {"lr": {"type": "float", "low": 0.01, "high": 0.03, "log": true}}},
 "objective": {"metric": "val_accuracy", "direction": "maximize"},
 "sampler": {"type": "random", "seed": 1}, "budget": {"trials": 2},
 "executors": {"local": 2},
 "job": {"kind": "engine",
         "model": {"layers": [{"type": "flatten"}, {"type": "linear", "out": "classes"}]},
         "data": {"format": "image_folder", "path": "$work/colors", "size": [8, 8],
                  "color": "rgb", "validation_fraction": 0.25, "split_seed": 0},
         "training": {"epochs": 8, "batch_size": 8, "lr": "{lr}", "seed": 0},
         "threads": 1, "artifacts_dir": "$work/runs"},
 "export": {"registry": "$work/registry", "name": "colors"}}
JSON

db="$work/colors.db"
out=$("$tuner" sweep "$work/colors.json" --storage "$db" 2>&1) || fail "sweep exited $?: $out"
grep -q "2/2 done (2 complete" <<<"$out" || fail "sweep: $out"
grep -q "^exported trial [0-9]* as colors/1" <<<"$out" || fail "no export: $out"
pre="$work/registry/colors/1/engine/preprocessing.json"
python3 - "$pre" <<'PY' || fail "the exported preprocessing: $(cat "$pre")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["version"] == 4, p
assert len(p["normalize"]["mean"]) == 3 and len(p["normalize"]["stddev"]) == 3, p
assert p["image"] == {"size": [8, 8], "color": "rgb"}, p
assert p["labels"] == ["blue", "green", "red"], p
PY
[ -s "$work/registry/colors/1/model.onnx" ] || fail "no model.onnx"

predicted=$("$tuner" predict --model "$work/registry/colors@champion" --input "$work/check" 2>&1) ||
  fail "predict on a folder exited $?: $predicted"
grep -q "^index,predicted,label,p_blue,p_green,p_red$" <<<"$predicted" ||
  fail "predict on a folder: $predicted"
[ "$(grep -c '^[0-9]*,\(blue\|green\|red\),\(blue\|green\|red\),' <<<"$predicted")" -eq 30 ] ||
  fail "predict on a folder: not 30 rows of class names: $predicted"
accuracy=$(sed -n 's/^accuracy \([0-9.e-]*\) (.*/\1/p' <<<"$predicted")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.8 else 1)" "${accuracy:-0}" ||
  fail "accuracy ${accuracy:-none} <= 0.8: $predicted"

one=$("$tuner" predict --model "$work/registry/colors@champion" --input "$work/check/red/03.png" 2>&1) ||
  fail "predict on a file exited $?: $one"
grep -q "^index,predicted,p_blue,p_green,p_red$" <<<"$one" || fail "predict on a file: $one"
grep -q "^0,red," <<<"$one" || fail "predict on a file: not red: $one"
grep -q "^predicted 1 samples" <<<"$one" || fail "predict on a file: $one"
echo "PASS (accuracy $accuracy)"
