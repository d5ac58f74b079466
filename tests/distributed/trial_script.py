#!/usr/bin/env python3
"""A command trial for the distributed tests: reports every 50 ms, then finishes or hangs.

  trial_script.py --x X [--marker PATH] [--sleep SECONDS | --hang]

Its objective is loss = (x - 0.5)^2. With --marker, a run that finds PATH already there finishes
at once (a re-run after its first run was lost); otherwise it creates PATH first and then:
  --sleep S  reports for S seconds, then prints the final metrics and exits 0;
  --hang     reports until it is killed (at most 60 s), as a trial whose executor dies.
It exits when its stdout is gone (its executor was killed): a report then fails with EPIPE.
"""
import argparse
import json
import os
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--x", type=float, required=True)
    parser.add_argument("--marker")
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--hang", action="store_true")
    args = parser.parse_args()
    loss = (args.x - 0.5) ** 2

    rerun = args.marker is not None and os.path.exists(args.marker)
    if args.marker is not None and not rerun:
        with open(args.marker, "w") as f:
            f.write(os.environ.get("TUNER_TRIAL_NUMBER", "?"))
    if not rerun:
        limit = 60.0 if args.hang else args.sleep
        start = time.monotonic()
        step = 0
        while time.monotonic() - start < limit:
            step += 1
            print(json.dumps({"step": step, "loss": loss + 1.0 / step}), flush=True)
            time.sleep(0.05)
        if args.hang:
            print("still hanging after 60 s", file=sys.stderr)
            return 2
    print(json.dumps({"loss": loss, "rerun": 1.0 if rerun else 0.0}), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        os._exit(141)
