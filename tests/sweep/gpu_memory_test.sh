#!/usr/bin/env bash
# GPU memory per trial, on a real NVIDIA GPU (skipped without one, or without PyTorch built with
# CUDA for the trial program):
# - a command job of a quarter GPU per trial and "gpu_memory_per_trial" of 40% of the GPU's
#   memory: never more than 2 trials at once on it, though the shares allow 4; each trial gets
#   TUNER_GPU_MEMORY_BYTES;
# - each trial's peak GPU memory, sampled through NVML, is stored (tuner trials --json and the
#   table's "GPU memory" column): at least what the program allocated and what PyTorch reserved,
#   at most that plus what a CUDA context takes;
# - an engine trial on the GPU (when Fashion-MNIST is found) has its peak stored too;
# - a job whose trials need more memory than the GPU has is refused before it starts.
#   gpu_memory_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/gpu-memory-$$"
skip() { echo "SKIP: $*"; exit 0; }
command -v nvidia-smi >/dev/null 2>&1 || skip "no NVIDIA driver here (nvidia-smi not found)"
python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  skip "no PyTorch with CUDA here for the trial program"
source "$(dirname "$0")/process_test_lib.sh"
total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | head -1)
[ -n "$total_mib" ] || fail "nvidia-smi gave no memory for GPU 0"
per_trial_mib=$((total_mib * 2 / 5))
export CUDA_VISIBLE_DEVICES=0

# The trial: holds MiB of GPU memory for 2 s, records what it saw, reports a loss.
cat >"$work/trial.py" <<'PY'
import json, os, sys, time, torch
mib = int(sys.argv[1])
start = time.time()
block = torch.ones(mib << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
time.sleep(2)
with open(sys.argv[2], "a") as runs:
    runs.write(json.dumps({"trial": int(os.environ["TUNER_TRIAL_NUMBER"]), "mib": mib,
                           "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
                           "memory": os.environ.get("TUNER_GPU_MEMORY_BYTES"),
                           "reserved": torch.cuda.memory_reserved(),
                           "start": start, "end": time.time()}) + "\n")
print(json.dumps({"loss": mib / 1024}), flush=True)
PY

# sweep_file NAME TRIALS JOB_EXTRA
sweep_file() {
  cat >"$work/$1.json" <<JSON
{"version": 1, "name": "$1",
 "space": {"params": {"mib": {"type": "categorical", "choices": [1024, 2048, 4096]}}},
 "objective": {"metric": "loss", "direction": "minimize"},
 "sampler": {"type": "random", "seed": 3},
 "budget": {"trials": $2},
 "job": {"kind": "command", "argv": ["python3", "$work/trial.py", "{mib}", "$work/$1.runs"],
         "gpus_per_trial": 0.25$3},
 "executors": {"local": 4}}
JSON
}

sweep_file packed 6 ", \"gpu_memory_per_trial\": \"${per_trial_mib}M\""
out=$(timeout -k 5 240 "$tuner" sweep "$work/packed.json" --storage "$work/packed.db" 2>&1) ||
  fail "the sweep failed: $out"
"$tuner" trials --storage "$work/packed.db" --study packed --json >"$work/trials.json" ||
  fail "tuner trials --json failed"
python3 - "$work/packed.runs" "$work/trials.json" "$per_trial_mib" <<'PY' || fail "$out"
import json, sys
runs = {r["trial"]: r for r in map(json.loads, open(sys.argv[1]))}
stored = [json.loads(line) for line in open(sys.argv[2])]
per_trial = int(sys.argv[3]) << 20
assert len(runs) == 6, f"{len(runs)} trials ran, expected 6"
for r in runs.values():
    assert r["cuda"] == "0", f"trial {r['trial']}: CUDA_VISIBLE_DEVICES={r['cuda']!r}"
    assert r["memory"] == str(per_trial), f"trial {r['trial']}: TUNER_GPU_MEMORY_BYTES={r['memory']!r}"
events = sorted([(r["start"], 1) for r in runs.values()] + [(r["end"], -1) for r in runs.values()])
running = most = 0
for _, delta in events:
    running += delta
    most = max(most, running)
assert most <= 2, f"{most} trials held the GPU at once; its memory allows 2"
for t in stored:
    r = runs[t["number"]]
    peak = t.get("gpu_memory_peak_bytes")
    assert peak is not None, f"trial {t['number']}: no peak GPU memory stored: {t}"
    low = max(r["mib"] << 20, r["reserved"])
    assert low <= peak <= low + (3 << 30), \
        f"trial {t['number']}: peak {peak >> 20} MiB, allocated {r['mib']} MiB, reserved {r['reserved'] >> 20} MiB"
    print(f"trial {t['number']}: allocated {r['mib']} MiB, PyTorch reserved {r['reserved'] >> 20} MiB, "
          f"peak stored {peak >> 20} MiB")
print(f"at most {most} trials at once on the GPU")
PY
"$tuner" trials --storage "$work/packed.db" --study packed | grep -q "GPU memory" ||
  fail "tuner trials shows no GPU memory column"

# More memory per trial than the GPU has: refused before anything runs.
sweep_file huge 1 ", \"gpu_memory_per_trial\": \"$((total_mib * 2))M\""
out=$(timeout -k 5 60 "$tuner" sweep "$work/huge.json" --storage "$work/huge.db" 2>&1) &&
  fail "a job of twice the GPU's memory ran: $out"
grep -q "on each of its GPUs (job.gpu_memory_per_trial), and the largest GPU" <<<"$out" ||
  fail "no refusal of twice the GPU's memory in: $out"
[ ! -e "$work/huge.runs" ] || fail "a trial of the refused job ran"

# An engine trial on the GPU: its peak is stored as well.
data="${TUNER_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist/}"
if [ -e "$data/train-images-idx3-ubyte.gz" ] || [ -e "$data/train-images-idx3-ubyte" ]; then
  cat >"$work/engine.json" <<JSON
{"version": 1, "name": "engine",
 "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.01, "log": true}}},
 "objective": {"metric": "val_accuracy", "direction": "maximize"},
 "sampler": {"type": "random", "seed": 1},
 "budget": {"trials": 2},
 "job": {"kind": "engine", "backend": "cuda",
         "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]},
         "data": {"dataset": "fashion-mnist", "train": 2048, "validation": 512},
         "training": {"lr": "{lr}", "epochs": 1}, "objective_metric": "val_accuracy"},
 "executors": {"local": 1}}
JSON
  out=$(timeout -k 5 180 "$tuner" sweep "$work/engine.json" --storage "$work/engine.db" 2>&1) ||
    fail "the engine sweep failed: $out"
  "$tuner" trials --storage "$work/engine.db" --study engine --json >"$work/engine_trials.json"
  python3 - "$work/engine_trials.json" <<'PY' || fail "$out"
import json, sys
stored = [json.loads(line) for line in open(sys.argv[1])]
for t in stored:
    assert t["state"] == "COMPLETE", t
    peak = t.get("gpu_memory_peak_bytes")
    assert peak and peak > (64 << 20), f"engine trial {t['number']}: peak {peak}"
    print(f"engine trial {t['number']}: peak stored {peak >> 20} MiB")
PY
else
  echo "no Fashion-MNIST at $data: the engine part is not run"
fi
echo "PASS"
