#!/usr/bin/env python3
"""A command trial for population-based training (docs/schedulers.md, "PBT").

The toy objective: x <- (1 - lr) * x + lr^2 from x = 10, whose fixed point is lr: a large lr
gets down fast, a small one gets lower, so the best schedule is a large lr early and a small one
late, which PBT finds by handing good members' checkpoints to bad ones with changed lr.

It keeps its state (the step and x) in $TUNER_CHECKPOINT_PATH: it continues from it when the
file exists (a PBT segment starts from its parent's checkpoint there) and saves it after every
step, writing a new file and renaming it, so that a pause (SIGTERM) leaves a whole checkpoint.
Its steps are global: a segment goes on from the step its checkpoint holds, and stops by itself
at $TUNER_PAUSE_AT_STEP, the segment's last step (without it, tuner's pause would come a few
steps late: these steps take microseconds).

Run it by hand:
  TUNER_CHECKPOINT_PATH=/tmp/state.json python3 train_schedule.py --lr 0.5 --steps 20
"""
import argparse
import json
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    path = os.environ.get("TUNER_CHECKPOINT_PATH")
    state = {"step": 0, "x": 10.0}
    if path and os.path.exists(path):
        with open(path) as f:
            state = json.load(f)
        print(f"resumed at step {state['step']} from {path}", file=sys.stderr)
    end = min(args.steps, int(os.environ.get("TUNER_PAUSE_AT_STEP", args.steps)))
    while state["step"] < end:
        state["x"] = (1 - args.lr) * state["x"] + args.lr * args.lr
        state["step"] += 1
        if path:
            with open(path + ".tmp", "w") as f:
                json.dump(state, f)
            os.replace(path + ".tmp", path)
        print(json.dumps({"step": state["step"], "loss": state["x"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
