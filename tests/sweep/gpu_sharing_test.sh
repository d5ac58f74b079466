#!/usr/bin/env bash
# GPUs for command trials, end to end with real processes, on a declared
# inventory of 4 GPUs (no driver needed: the engine is told to find none, so the declared ids are
# offered as they are):
# - "gpus_per_trial": 0.5 on executors.gpus [0, 1, 2, 3] and 8 local slots: 8 trials run at once,
#   never more than 2 on one GPU; each trial sees one GPU id in CUDA_VISIBLE_DEVICES (read from
#   inside the program) and the same in TUNER_GPUS;
# - a job without gpus_per_trial leaves CUDA_VISIBLE_DEVICES as the user had it;
# - a job that needs more GPUs than the local executor has is refused before it starts, naming
#   the number the executor has.
#   gpu_sharing_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/gpu-sharing-$$"
source "$(dirname "$0")/process_test_lib.sh"

# The trial: records its GPU variables and when it ran, then reports a loss.
cat >"$work/trial.py" <<'PY'
import json, os, sys, time
start = time.time()
time.sleep(1.5)
with open(sys.argv[2], "a") as runs:
    runs.write(json.dumps({"trial": int(os.environ["TUNER_TRIAL_NUMBER"]),
                           "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
                           "tuner_gpus": os.environ.get("TUNER_GPUS"),
                           "start": start, "end": time.time()}) + "\n")
print(json.dumps({"loss": float(sys.argv[1]) ** 2}), flush=True)
PY

# sweep_file NAME TRIALS JOB_EXTRA EXECUTORS
sweep_file() {
  cat >"$work/$1.json" <<JSON
{"version": 1, "name": "$1",
 "space": {"params": {"x": {"type": "float", "low": -1, "high": 1}}},
 "objective": {"metric": "loss", "direction": "minimize"},
 "sampler": {"type": "random", "seed": 1},
 "budget": {"trials": $2},
 "job": {"kind": "command", "argv": ["python3", "$work/trial.py", "{x}", "$work/$1.runs"]$3},
 "executors": $4}
JSON
}

# 16 trials of half a GPU on 4 GPUs and 8 slots: two waves of 8.
sweep_file halves 16 ', "gpus_per_trial": 0.5' '{"local": 8, "gpus": [0, 1, 2, 3]}'
out=$(CUDA_VISIBLE_DEVICES="" timeout -k 5 60 "$tuner" sweep "$work/halves.json" \
        --storage "$work/halves.db" 2>&1) || fail "the sweep of halves failed: $out"
python3 - "$work/halves.runs" <<'PY' || fail "the sweep of halves: $out"
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
assert len(runs) == 16, f"{len(runs)} trials ran, expected 16"
for r in runs:
    assert r["cuda"] in ("0", "1", "2", "3"), f"trial {r['trial']}: CUDA_VISIBLE_DEVICES={r['cuda']!r}"
    assert r["tuner_gpus"] == r["cuda"], f"trial {r['trial']}: TUNER_GPUS={r['tuner_gpus']!r}"
# Walk the starts and ends in time order: how many ran at once, in all and on each GPU.
events = sorted([(r["start"], 1, r["cuda"]) for r in runs] + [(r["end"], -1, r["cuda"]) for r in runs],
                key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
running, per_gpu, most, most_per_gpu = 0, {}, 0, 0
for _, delta, gpu in events:
    running += delta
    per_gpu[gpu] = per_gpu.get(gpu, 0) + delta
    most = max(most, running)
    most_per_gpu = max(most_per_gpu, per_gpu[gpu])
assert most == 8, f"at most {most} trials ran at once, expected 8"
assert most_per_gpu == 2, f"{most_per_gpu} trials ran at once on one GPU, expected at most 2"
print(f"16 trials, 8 at once, at most {most_per_gpu} per GPU")
PY

# No gpus_per_trial: the variable stays as the user set it.
sweep_file cpu 2 '' '{"local": 2}'
out=$(CUDA_VISIBLE_DEVICES="users-own" timeout -k 5 60 "$tuner" sweep "$work/cpu.json" \
        --storage "$work/cpu.db" 2>&1) ||
  fail "the sweep without GPUs failed: $out"
python3 - "$work/cpu.runs" <<'PY' || fail "the sweep without GPUs: $out"
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
assert len(runs) == 2, runs
for r in runs:
    assert r["cuda"] == "users-own" and r["tuner_gpus"] is None, r
PY

# 8 GPUs per trial, 4 on the only executor: refused before anything runs.
sweep_file big 1 ', "gpus_per_trial": 8' '{"local": 2, "gpus": [0, 1, 2, 3]}'
out=$(CUDA_VISIBLE_DEVICES="" timeout -k 5 30 "$tuner" sweep "$work/big.json" \
        --storage "$work/big.db" 2>&1) && fail "a job of 8 GPUs on 4 ran: $out"
grep -q "each trial needs 8 GPU(s) (job.gpus_per_trial), and the local executor, the only one without an endpoint, has 4 (executors.gpus)" <<<"$out" ||
  fail "no refusal of 8 GPUs on 4 in: $out"
[ ! -e "$work/big.runs" ] || fail "a trial of the refused job ran"

# A misspelt member gets a did-you-mean.
sweep_file typo 1 ', "gpus_per_trail": 1' '{"local": 1}'
out=$("$tuner" sweep "$work/typo.json" --storage "$work/typo.db" 2>&1) && fail "a typo ran: $out"
grep -q 'gpus_per_trial' <<<"$out" || fail "no did-you-mean for gpus_per_trail in: $out"
echo "PASS"
