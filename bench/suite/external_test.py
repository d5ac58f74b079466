#!/usr/bin/env python3
"""Checks `sampler_suite --external`: tuner's samplers on a problem another process evaluates.

usage: external_test.py --runner sampler_suite

Through bench/optuna/anchor_suite.py's driver (run_tuner), on a conditional mixed space defined
here: every proposed point fits the space (bounds, integers, choice indices, null exactly for the
inactive parameters), the record has the suite's fields and the regret the evaluator's values
give, the run is the same for the same seed, and an {"error"} answer fails that trial (counted)
while the run goes on. Standard library only.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "optuna"))
import anchor_suite  # noqa: E402
import external_problems as ep  # noqa: E402

failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


def space():
    child = dict(ep._float("u", 0.0, 1.0), parent="kind", parent_choices=[1])
    return [ep._float("x", -5.0, 5.0), ep._int("n", 1, 64, True), ep._cat("kind", ["a", "b"]),
            child]


class Recorder(ep.ExternalProblem):
    """Records each point; fails the evaluation of trial numbers in `fail`."""

    def __init__(self, fail=()):
        super().__init__("external_quadratic", "test", "", space(), 0.0, self.f)
        self.points, self.fail = [], set(fail)

    def f(self, p):
        if len(self.points) - 1 in self.fail:
            raise ValueError("objective failed")
        return (p[0] - 1.0) ** 2 + (math.log2(p[1]) - 3.0) ** 2 + (
            0.5 if p[2] == 0 else (p[3] - 0.25) ** 2)

    def evaluate(self, point, seed=0, number=0):
        self.points.append(list(point))
        value = self.f(point)  # not cached: every trial is recorded
        return value, value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", required=True)
    args = parser.parse_args()
    p = Recorder()
    r = anchor_suite.run_tuner(p, "default", 3, 40, {10, 40}, args.runner)
    check(r["impl"] == "tuner" and r["sampler"] == "default" and r["problem"] == p.name and
          r["seed"] == 3 and r["trials"] == 40 and r["failed"] == 0 and "duplicates" in r,
          f"record fields: {r}")
    check(len(p.points) == 40, f"{len(p.points)} points evaluated, 40 trials")
    for x in p.points:
        ok = (-5 <= x[0] <= 5 and x[1] == int(x[1]) and 1 <= x[1] <= 64 and x[2] in (0.0, 1.0)
              and (math.isnan(x[3]) if x[2] == 0 else 0 <= x[3] <= 1))
        check(ok, f"point {x} does not fit the space")
    best = min(p.f(x) for x in p.points)
    check(set(r["regret"]) == {"10", "40"} and abs(r["regret"]["40"] - best) < 1e-12,
          f"regret {r['regret']}, best value {best}")
    again = Recorder()
    anchor_suite.run_tuner(again, "default", 3, 40, {40}, args.runner)
    check(again.points == p.points, "the same seed proposed other points")
    failing = Recorder(fail={5, 6})
    r = anchor_suite.run_tuner(failing, "default", 0, 20, {20}, args.runner)
    check(r["failed"] == 2 and "objective failed" in r.get("fail_reason", ""),
          f"failed trials: {r}")
    check(len(failing.points) == 20, "the run did not go on after a failed trial")
    if failures:
        for f in failures:
            print("FAIL:", f)
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
