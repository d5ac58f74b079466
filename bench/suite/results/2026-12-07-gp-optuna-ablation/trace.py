#!/usr/bin/env python3
"""One regret run's proposals: trace.py SAMPLER_SUITE PROBLEM SAMPLER SEED TRIALS.

Runs `SAMPLER_SUITE --external` on a suite problem, each point evaluated by `SAMPLER_SUITE --eval`;
prints one line a trial (number, point, noiseless value, best so far), then the run's record.
"""
import json
import subprocess
import sys

binary, problem, sampler, seed, trials = sys.argv[1:6]
described = json.loads(subprocess.run([binary, "--describe"], capture_output=True, text=True,
                                      check=True).stdout)
p = next(q for q in described["problems"] if q["name"] == problem)
ev = subprocess.Popen([binary, "--eval", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                      text=True)
run = subprocess.Popen([binary, "--external"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       text=True)
header = {"problem": {"name": problem, "optimum": p["optimum"], "noise_sd": p["noise_sd"],
                      "params": p["params"]},
          "sampler": sampler, "seed": int(seed), "trials": int(trials),
          "checkpoints": [25, 50, 100]}
run.stdin.write(json.dumps(header) + "\n")
run.stdin.flush()
best = float("inf")
for line in run.stdout:
    q = json.loads(line)
    if "point" not in q:
        print(line.strip())
        break
    params = {s["name"]: v for s, v in zip(p["params"], q["point"])}
    ev.stdin.write(json.dumps({"problem": problem, "params": params}) + "\n")
    ev.stdin.flush()
    answer = json.loads(ev.stdout.readline())
    best = min(best, answer["noiseless"])
    print(q["number"], " ".join(f"{v:8.4f}" for v in q["point"]),
          f"{answer['noiseless']:10.4f} best {best:.4f}")
    run.stdin.write(json.dumps({"value": answer["observed"]}) + "\n")
    run.stdin.flush()
