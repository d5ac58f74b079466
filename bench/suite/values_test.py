#!/usr/bin/env python3
"""Checks that both sides of the function suite evaluate the same, correct functions.

usage: values_test.py --lib libbench_suite.so --runner sampler_suite

1. Random points of every problem (drawn here from its described space, conditions included)
   are evaluated through the Optuna side's ctypes binding (bench/optuna/suite_problems.py) and,
   as named params, through the C++ runner's own mapping (`sampler_suite --eval`): the noiseless
   and the observed (noisy) values must agree to the bit.
2. Independent Python implementations of Branin, Hartmann3/6, Rosenbrock, Ackley, Levy and BBOB
   f1 (given its minimizer) agree with the library within 1e-12 (relative).
3. Every problem's listed minimizer evaluates to its optimum (1e-5), no random point and no
   small perturbation of a continuous minimizer is below the optimum (so the regret is >= 0).
4. Noise: observed - noiseless has mean ~0 and standard deviation ~noise_sd over 4,000 trial
   numbers, differs between seeds, and is 0 for a noiseless problem.
5. A point of the wrong size is refused with a message that names the problem.
Standard library only. Exit status 0 when every check passes.
"""

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "optuna"))
import suite_problems  # noqa: E402

failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


def random_point(problem, rng):
    point = [math.nan] * len(problem.params)
    for i, s in enumerate(problem.params):
        if not problem.is_active(i, point):
            continue
        if s["type"] == "categorical":
            point[i] = float(rng.randrange(len(s["choices"])))
        elif s["type"] == "int":
            if s["log"]:
                point[i] = float(min(int(s["high"]), max(int(s["low"]), round(
                    math.exp(rng.uniform(math.log(s["low"]), math.log(s["high"])))))))
            else:
                point[i] = float(rng.randint(int(s["low"]), int(s["high"])))
        elif s["log"]:
            point[i] = math.exp(rng.uniform(math.log(s["low"]), math.log(s["high"])))
        else:
            point[i] = rng.uniform(s["low"], s["high"])
    return point


# --- Independent reference implementations ------------------------------------------------------

def branin(x):
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x[1] - b * x[0] ** 2 + c * x[0] - 6) ** 2 + 10 * (1 - t) * math.cos(x[0]) + 10


def hartmann(x, a, p):
    alpha = [1.0, 1.2, 3.0, 3.2]
    return -sum(alpha[i] * math.exp(-sum(a[i][j] * (x[j] - p[i][j]) ** 2 for j in range(len(x))))
                for i in range(4))


H3 = ([[3, 10, 30], [0.1, 10, 35], [3, 10, 30], [0.1, 10, 35]],
      [[0.3689, 0.1170, 0.2673], [0.4699, 0.4387, 0.7470], [0.1091, 0.8732, 0.5547],
       [0.0381, 0.5743, 0.8828]])
H6 = ([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
       [17, 8, 0.05, 10, 0.1, 14]],
      [[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
       [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
       [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
       [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381]])


def rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


def ackley(x):
    d = len(x)
    return (-20 * math.exp(-0.2 * math.sqrt(sum(v * v for v in x) / d))
            - math.exp(sum(math.cos(2 * math.pi * v) for v in x) / d) + 20 + math.e)


def levy(x):
    w = [1 + (v - 1) / 4 for v in x]
    s = math.sin(math.pi * w[0]) ** 2
    s += sum((wi - 1) ** 2 * (1 + 10 * math.sin(math.pi * wi + 1) ** 2) for wi in w[:-1])
    return s + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)


def references(problem):
    name = problem.name
    if name in ("branin", "branin_noisy"):
        return branin
    if name == "hartmann3":
        return lambda x: hartmann(x, *H3)
    if name in ("hartmann6", "hartmann6_noisy"):
        return lambda x: hartmann(x, *H6)
    if name == "rosenbrock10":
        return rosenbrock
    if name == "ackley10":
        return ackley
    if name == "levy10":
        return levy
    if name.startswith("f1_sphere_"):
        opt = problem.minimizer
        return lambda x: sum((a - b) ** 2 for a, b in zip(x, opt))
    return None


def close(a, b, rel=1e-12, abs_tol=1e-12):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=None)
    parser.add_argument("--runner", required=True, help="the sampler_suite executable")
    parser.add_argument("--points", type=int, default=20, help="random points per problem")
    args = parser.parse_args()
    suite = suite_problems.Suite(args.lib)
    rng = random.Random(17)

    # 1. ctypes against the C++ runner's --eval, and 2./3. the values themselves.
    queries, expected = [], []
    for problem in suite.problems.values():
        ref = references(problem)
        for k in range(args.points):
            point = random_point(problem, rng)
            seed, number = rng.randrange(1000), k
            noiseless, observed = problem.evaluate(point, seed, number)
            queries.append({"problem": problem.name, "seed": seed, "number": number,
                            "params": problem.params_of(point)})
            expected.append((problem.name, noiseless, observed))
            check(noiseless >= problem.optimum - 1e-9,
                  f"{problem.name}: random point {point} is below the optimum: {noiseless}")
            if ref is not None:
                check(close(noiseless, ref(point)),
                      f"{problem.name}: library {noiseless} != reference {ref(point)} at {point}")
        if problem.minimizer:
            at_min = problem.evaluate(problem.minimizer)[0]
            check(abs(at_min - problem.optimum) <= 1e-5,
                  f"{problem.name}: f(minimizer) = {at_min}, optimum {problem.optimum}")
            continuous = [i for i, s in enumerate(problem.params)
                          if s["type"] == "float" and not math.isnan(problem.minimizer[i])]
            for _ in range(50 if continuous else 0):
                x = list(problem.minimizer)
                for i in continuous:
                    s = problem.params[i]
                    step = 1e-3 * (s["high"] - s["low"]) * rng.gauss(0, 1)
                    x[i] = min(s["high"], max(s["low"], x[i] * (1 + 1e-3 * rng.gauss(0, 1))
                                              if s["log"] else x[i] + step))
                v = problem.evaluate(x)[0]
                check(v >= problem.optimum - 1e-7,
                      f"{problem.name}: {x} near the minimizer is below the optimum: {v}")
        else:
            check(False, f"{problem.name}: no minimizer listed")
    result = subprocess.run([args.runner, "--eval", "-"], input="".join(
        json.dumps(q) + "\n" for q in queries), capture_output=True, text=True, check=False)
    check(result.returncode == 0, f"sampler_suite --eval failed: {result.stderr.strip()}")
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    check(len(answers) == len(expected),
          f"--eval answered {len(answers)} of {len(expected)} queries")
    for (name, noiseless, observed), a in zip(expected, answers):
        check(a["problem"] == name and a["noiseless"] == noiseless and a["observed"] == observed,
              f"{name}: ctypes gave ({noiseless!r}, {observed!r}), the C++ runner "
              f"({a['noiseless']!r}, {a['observed']!r})")

    # 4. Noise.
    for problem in suite.problems.values():
        point = problem.minimizer or random_point(problem, rng)
        diffs = [problem.evaluate(point, 3, k)[1] - problem.evaluate(point, 3, k)[0]
                 for k in range(4000)]
        if problem.noise_sd == 0:
            check(all(d == 0 for d in diffs), f"{problem.name}: noise on a noiseless problem")
            continue
        mean, sd = statistics.fmean(diffs), statistics.pstdev(diffs)
        check(abs(mean) < 4 * problem.noise_sd / math.sqrt(4000) and
              abs(sd / problem.noise_sd - 1) < 0.06,
              f"{problem.name}: noise mean {mean}, sd {sd}, expected 0 and {problem.noise_sd}")
        other = problem.evaluate(point, 4, 0)[1] - problem.evaluate(point, 4, 0)[0]
        check(other != diffs[0], f"{problem.name}: seeds 3 and 4 draw the same noise")

    # 5. Errors.
    try:
        suite.evaluate("branin", [0.0], 0, 0)
        check(False, "a 1-value point for branin was accepted")
    except suite_problems.SuiteError as e:
        check("branin" in str(e) and "2 values" in str(e), f"unclear error: {e}")

    n = len(suite.problems)
    if failures:
        for f in failures[:30]:
            print("FAIL:", f)
        print(f"{len(failures)} failures over {n} problems")
        return 1
    print(f"ok: {n} problems, {len(expected)} points agree between ctypes and the C++ runner")
    return 0


if __name__ == "__main__":
    sys.exit(main())
