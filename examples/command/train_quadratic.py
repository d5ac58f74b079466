#!/usr/bin/env python3
"""A command trial for tuner: "trains" by gradient descent on f(x) = (x - 3)^2.

It follows the contract of docs/command_jobs.md:
  * hyperparameters arrive on the command line (from the sweep's argv template) and, all of
    them, as JSON in the environment variable TUNER_PARAMS;
  * each step prints one JSON line {"step": N, "loss": ..., "x": ...} to stdout (flushed at
    once): "loss" is the objective; every number is kept as that step's metrics;
  * the end prints the final metrics as one JSON line without "step", and writes them to
    result.json in the trial's own folder, $TUNER_ARTIFACTS_DIR, when the job gives it one;
  * anything else (progress text, warnings) may go to stdout or stderr: it lands in the log.

Run it by hand:
  TUNER_PARAMS='{"lr": 0.1, "steps": 20}' python3 train_quadratic.py --lr 0.1 --steps 20
"""
import argparse
import json
import math
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--x0", type=float, default=0.0)
    args = parser.parse_args()

    params = json.loads(os.environ.get("TUNER_PARAMS", "{}"))
    trial = os.environ.get("TUNER_TRIAL_NUMBER", "?")
    print(f"trial {trial}: params from TUNER_PARAMS: {params}", file=sys.stderr)

    x = args.x0
    loss = (x - 3.0) * (x - 3.0)
    for step in range(1, args.steps + 1):
        x -= args.lr * 2.0 * (x - 3.0)
        loss = (x - 3.0) * (x - 3.0)
        # json.dumps writes inf and nan as Infinity and NaN; tuner reads them as such.
        print(json.dumps({"step": step, "loss": loss, "x": x}), flush=True)
        if not math.isfinite(loss):
            print(f"diverged at step {step}: lr {args.lr} is too large", file=sys.stderr)
            return 1
    if os.environ.get("TUNER_ARTIFACTS_DIR"):
        with open(os.path.join(os.environ["TUNER_ARTIFACTS_DIR"], "result.json"), "w") as out:
            json.dump({"loss": loss, "x": x}, out)
    print(json.dumps({"loss": loss, "x": x}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
