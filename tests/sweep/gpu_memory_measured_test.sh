#!/usr/bin/env bash
# Each trial's peak GPU memory, end to end with real processes, through a stand-in for the
# driver's NVML library (tests/sweep/fake_nvml.cc: the GPU's processes are those named in a
# folder), on a declared GPU:
# - a trial's peak is the most that the processes of its process group held at once (its
#   program and a child it started), stored and shown by `tuner trials` and `trials --json`;
#   another process on the GPU is never counted;
# - a trial whose peak is above the job's gpu_memory_per_trial is logged;
# - a job without GPUs gets no peak.
#   gpu_memory_measured_test.sh TUNER_BINARY FAKE_NVML_DIR WORK_DIR
set -uo pipefail
tuner="$1"; nvml="$2"; work="$3/gpu-memory-measured-$$"
source "$(dirname "$0")/process_test_lib.sh"
export TUNER_FAKE_NVML_DIR="$work/gpu"
mkdir -p "$TUNER_FAKE_NVML_DIR"

# A process of someone else's on the GPU: 8 GiB, never a trial's.
sleep 120 &
pids+=($!)
echo $((8 << 30)) >"$TUNER_FAKE_NVML_DIR/$!"

# The trial: "uses" MiB itself and 100 MiB in a child for 1.2 s, then 1 MiB: its peak is
# MiB + 100 MiB.
cat >"$work/trial.py" <<'PY'
import json, os, subprocess, sys, time
gpu = os.environ["TUNER_FAKE_NVML_DIR"]
def use(pid, mib):
    with open(f"{gpu}/.{pid}", "w") as f:
        f.write(str(mib << 20))
    os.rename(f"{gpu}/.{pid}", f"{gpu}/{pid}")
mib = int(sys.argv[1])
child = subprocess.Popen(["sleep", "30"])
use(child.pid, 100)
use(os.getpid(), mib)
time.sleep(1.2)
use(os.getpid(), 1)
time.sleep(0.6)
child.kill()
print(json.dumps({"loss": mib / 1024}), flush=True)
PY

# sweep_file NAME JOB_EXTRA
sweep_file() {
  cat >"$work/$1.json" <<JSON
{"version": 1, "name": "$1",
 "space": {"params": {"mib": {"type": "categorical", "choices": [256, 1024]}}},
 "objective": {"metric": "loss", "direction": "minimize"},
 "sampler": {"type": "grid"},
 "budget": {"trials": 2},
 "job": {"kind": "command", "argv": ["python3", "$work/trial.py", "{mib}"]$2},
 "executors": {"local": 2, "gpus": [0]}}
JSON
}

sweep_file measured ', "gpus_per_trial": 0.5, "gpu_memory_per_trial": "512M"'
out=$(CUDA_VISIBLE_DEVICES="" LD_LIBRARY_PATH="$nvml" timeout -k 5 60 "$tuner" sweep \
        "$work/measured.json" --storage "$work/measured.db" 2>&1) || fail "the sweep failed: $out"
"$tuner" trials --storage "$work/measured.db" --study measured --json >"$work/measured.trials" ||
  fail "trials --json failed"
python3 - "$work/measured.trials" <<'PY' || fail "stored peaks: $(cat "$work/measured.trials")"
import json, sys
trials = [json.loads(line) for line in open(sys.argv[1])]
assert sorted(t["params"]["mib"] for t in trials) == [256, 1024], trials
for t in trials:
    assert t["state"] == "COMPLETE", t
    expected = (t["params"]["mib"] + 100) << 20
    assert t.get("gpu_memory_peak_bytes") == expected, \
        f"trial {t['number']}: peak {t.get('gpu_memory_peak_bytes')}, expected {expected}"
print("peaks stored: " + ", ".join(str(t["gpu_memory_peak_bytes"] >> 20) + " MiB" for t in trials))
PY
table=$("$tuner" trials --storage "$work/measured.db" --study measured) || fail "trials failed"
grep -q "GPU memory" <<<"$table" || fail "no GPU memory column in: $table"
grep -q "356 MiB" <<<"$table" || fail "no 356 MiB peak in: $table"
grep -q "1.1 GiB" <<<"$table" || fail "no 1.1 GiB peak in: $table"
grep -Eq "trial [0-9]+: its processes held up to 1.1 GiB of GPU memory, more than the job's gpu_memory_per_trial \(512 MiB\)" <<<"$out" ||
  fail "the trial over its stated memory was not logged: $out"
grep -q "held up to 356 MiB" <<<"$out" && fail "the trial within its stated memory was logged: $out"

# Without gpus_per_trial the trials are not measured.
sweep_file unmeasured ''
out=$(LD_LIBRARY_PATH="$nvml" timeout -k 5 60 "$tuner" sweep "$work/unmeasured.json" \
        --storage "$work/unmeasured.db" 2>&1) || fail "the sweep without GPUs failed: $out"
"$tuner" trials --storage "$work/unmeasured.db" --study unmeasured --json |
  grep -q gpu_memory_peak_bytes && fail "a trial without GPUs has a peak"
echo "PASS"
