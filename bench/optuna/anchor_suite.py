#!/usr/bin/env python3
"""Anchors of the function suite: samplers other than tuner's and Optuna's, and tuner's samplers
on the problems defined in Python (external_problems.py), in the same runs and the same records
as bench/optuna/sampler_suite.py.

Regret runs: for each problem, sampler and seed s, --trials sequential ask/tell steps; each
trial's observed value is the problem's (noise included, as on the other sides); the regret after
k trials is the best noiseless value among the first k minus the optimum. One JSON line a run is
appended to --out ({"impl": "anchor" or "tuner", "sampler": ...}); runs already there with at
least as many trials are skipped; --shard K/N splits the seeds.

Samplers:
  smac       SMAC3's HyperparameterOptimizationFacade (random forest, log-EI, Sobol initial
             design), Scenario(deterministic=True for noiseless problems, seed=s); conditional
             parameters as ConfigSpace conditions. Needs PyPI smac.
  hebo       HEBO(space, scramble_seed=s), numpy and torch seeded with s; no conditional
             spaces in HEBO: it proposes every parameter and the inactive ones are ignored.
             Needs PyPI HEBO (its own virtual environment: it pins numpy < 1.25, pymoo 0.6.0).
  tuner:NAME tuner's sampler NAME (default, tpe, gp, random: bench/bench_common.h) through
             `sampler_suite --external` (--runner): for the problems defined here (COCO, model
             fits); on the C++ suite's own problems sampler_suite runs them directly.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import external_problems  # noqa: E402
import suite_problems  # noqa: E402

ANCHORS = ("smac", "hebo")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def version_of(sampler):
    from importlib import metadata
    package = {"smac": "smac", "hebo": "HEBO"}.get(sampler)
    try:
        return metadata.version(package) if package else ""
    except metadata.PackageNotFoundError:
        return "?"


# --- Anchors as ask/tell loops --------------------------------------------------------------

class Smac:
    def __init__(self, problem, seed, trials):
        from ConfigSpace import (Categorical, ConfigurationSpace, EqualsCondition, Float,
                                 InCondition, Integer)
        from smac import HyperparameterOptimizationFacade, Scenario
        self.problem = problem
        cs = ConfigurationSpace(seed=seed)
        hps = {}
        for s in problem.params:
            if s["type"] == "float":
                hp = Float(s["name"], (s["low"], s["high"]), log=s["log"])
            elif s["type"] == "int":
                hp = Integer(s["name"], (int(s["low"]), int(s["high"])), log=s["log"])
            else:
                hp = Categorical(s["name"], s["choices"])
            hps[s["name"]] = hp
            cs.add(hp)
        for s in problem.params:
            if s["parent"]:
                parent = next(p for p in problem.params if p["name"] == s["parent"])
                values = [parent["choices"][c] for c in s["parent_choices"]]
                cs.add(EqualsCondition(hps[s["name"]], hps[s["parent"]], values[0])
                       if len(values) == 1 else InCondition(hps[s["name"]], hps[s["parent"]],
                                                            values))
        self._dir = tempfile.TemporaryDirectory()
        scenario = Scenario(cs, deterministic=problem.noise_sd == 0, n_trials=trials, seed=seed,
                            output_directory=self._dir.name)
        self.smac = HyperparameterOptimizationFacade(
            scenario, lambda config, seed=0: 0.0, overwrite=True, logging_level=40)

    def ask(self):
        self.info = self.smac.ask()
        config = dict(self.info.config)
        point = []
        for s in self.problem.params:
            v = config.get(s["name"])
            point.append(math.nan if v is None else
                         float(s["choices"].index(v)) if s["type"] == "categorical" else float(v))
        return point

    def tell(self, value):
        from smac.runhistory.dataclasses import TrialValue
        self.smac.tell(self.info, TrialValue(cost=value))


class Hebo:
    def __init__(self, problem, seed, trials):
        import numpy as np
        import torch
        from hebo.design_space.design_space import DesignSpace
        from hebo.optimizers.hebo import HEBO
        np.random.seed(seed)
        torch.manual_seed(seed)
        torch.set_num_threads(1)
        self.problem = problem
        spec = []
        for s in problem.params:
            if s["type"] == "categorical":
                spec.append({"name": s["name"], "type": "cat", "categories": s["choices"]})
            elif s["type"] == "int":
                spec.append({"name": s["name"], "type": "pow_int" if s["log"] else "int",
                             "lb": int(s["low"]), "ub": int(s["high"])})
            else:
                spec.append({"name": s["name"], "type": "pow" if s["log"] else "num",
                             "lb": s["low"], "ub": s["high"]})
        self.opt = HEBO(DesignSpace().parse(spec), scramble_seed=seed)

    def ask(self):
        self.rec = self.opt.suggest(n_suggestions=1)
        row = self.rec.iloc[0]
        point = []
        for s in self.problem.params:
            v = row[s["name"]]
            point.append(float(s["choices"].index(v)) if s["type"] == "categorical" else
                         float(round(v)) if s["type"] == "int" else
                         min(s["high"], max(s["low"], float(v))))
        return [v if self.problem.is_active(i, point) else math.nan
                for i, v in enumerate(point)]

    def tell(self, value):
        import numpy as np
        self.opt.observe(self.rec, np.array([[value]]))


def make_anchor(name, problem, seed, trials):
    return {"smac": Smac, "hebo": Hebo}[name](problem, seed, trials)


def regrets(problem, noiseless, trials, checkpoints, elapsed):
    regret, seconds, best = {}, {}, math.inf
    for k in range(1, trials + 1):
        best = min(best, noiseless[k - 1])
        if k in checkpoints:
            regret[str(k)] = best - problem.optimum if math.isfinite(best) else None
            seconds[str(k)] = elapsed[k - 1]
    return regret, seconds


def run_anchor(problem, name, seed, trials, checkpoints):
    noiseless, elapsed = [math.inf] * trials, [0.0] * trials
    failed, fail_reason, seen, duplicates = 0, "", set(), 0
    start = time.perf_counter()
    sampler = make_anchor(name, problem, seed, trials)
    for k in range(trials):
        try:
            point = sampler.ask()
            key = tuple("nan" if math.isnan(v) else v for v in point)
            duplicates += key in seen
            seen.add(key)
            value, observed = problem.evaluate(point, seed, k)
            sampler.tell(observed)
            noiseless[k] = value
        except Exception as e:  # a failing ask or tell fails its trial, as on the other sides
            failed += 1
            fail_reason = fail_reason or f"trial {k}: {type(e).__name__}: {e}"
        elapsed[k] = time.perf_counter() - start
    regret, seconds = regrets(problem, noiseless, trials, checkpoints, elapsed)
    record = {"bench": "suite", "impl": "anchor", "version": version_of(name), "sampler": name,
              "problem": problem.name, "seed": seed, "trials": trials, "regret": regret,
              "seconds": seconds, "failed": failed}
    if problem.noise_sd == 0:
        record["duplicates"] = duplicates
    if fail_reason:
        record["fail_reason"] = fail_reason
    return record


def run_tuner(problem, name, seed, trials, checkpoints, runner):
    """tuner's sampler `name` through `runner --external`: it proposes, this process evaluates."""
    header = {"problem": problem.describe(), "sampler": name, "seed": seed, "trials": trials,
              "checkpoints": sorted(checkpoints)}
    proc = subprocess.Popen([runner, "--external"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    proc.stdin.write(json.dumps(header) + "\n")
    proc.stdin.flush()
    record = None
    for line in proc.stdout:
        message = json.loads(line)
        if "point" not in message:
            record = message
            break
        point = [math.nan if v is None else v for v in message["point"]]
        try:
            answer = {"value": problem.evaluate(point, seed, message["number"])[0]}
        except Exception as e:
            answer = {"error": f"{type(e).__name__}: {e}"}
        proc.stdin.write(json.dumps(answer) + "\n")
        proc.stdin.flush()
    proc.stdin.close()
    if proc.wait() != 0 or record is None:
        raise SystemExit(f"anchor_suite.py: {runner} --external failed on {problem.name} "
                         f"(status {proc.returncode})")
    return record


def done_runs(path):
    done = {}
    if not path or not os.path.exists(path):
        return done
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r.get("bench") == "suite":
                key = (r["impl"], r["sampler"], r["problem"], r["seed"])
                done[key] = max(done.get(key, 0), r["trials"])
    return done


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="external",
                        help="names, groups or sets of the C++ suite or external_problems.py")
    parser.add_argument("--samplers", default="smac")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--checkpoints", default="25,50,100,200")
    parser.add_argument("--shard", default="0/1")
    parser.add_argument("--out", default="")
    parser.add_argument("--lib", default=None, help="libbench_suite.so (default: the build's)")
    parser.add_argument("--runner", default=os.path.join(ROOT, "build", "bench", "suite",
                                                         "sampler_suite"),
                        help="sampler_suite, for the tuner:NAME samplers")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    samplers = [s for s in args.samplers.split(",") if s]
    for s in samplers:
        if s not in ANCHORS and not s.startswith("tuner:"):
            raise SystemExit(f"anchor_suite.py: unknown sampler {s!r}: expected "
                             f"{', '.join(ANCHORS)} or tuner:NAME")
    try:
        suite = suite_problems.Suite(args.lib) if any(
            not external_problems.expand(x) for x in args.problems.split(",") if x) else None
        problems = external_problems.select(args.problems, suite)
    except (suite_problems.SuiteError, ValueError, ImportError) as e:
        raise SystemExit(f"anchor_suite.py: {e}")
    shard, shards = (int(x) for x in args.shard.split("/"))
    out = open(args.out, "a") if args.out else sys.stdout
    done = done_runs(args.out)
    for p in problems:
        for s in samplers:
            tuner = s.startswith("tuner:")
            if tuner and not isinstance(p, external_problems.ExternalProblem):
                continue  # sampler_suite runs tuner's samplers on the C++ suite's problems
            checkpoints = {k for k in (int(x) for x in args.checkpoints.split(",") if x)
                           if k <= args.trials} | {args.trials}
            impl, name = ("tuner", s[len("tuner:"):]) if tuner else ("anchor", s)
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                if (seed - args.first_seed) % shards != shard:
                    continue
                if done.get((impl, name, p.name, seed), 0) >= args.trials:
                    continue
                record = (run_tuner(p, name, seed, args.trials, checkpoints, args.runner)
                          if tuner else run_anchor(p, s, seed, args.trials, checkpoints))
                out.write(json.dumps(record) + "\n")
                out.flush()


if __name__ == "__main__":
    main()
