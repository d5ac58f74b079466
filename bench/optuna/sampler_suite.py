#!/usr/bin/env python3
"""Optuna peer of bench/suite/sampler_suite.cc: Optuna's samplers on the function suite.

Regret runs: for each problem, sampler and seed s, optuna.create_study(sampler=...(seed=s)) and
optimize() for --trials trials (define-by-run, one suggest_* per active parameter, in the
problem's order); each trial returns the noiseless objective plus the problem's noise for
(s, trial number), both computed by the C++ definitions (suite_problems.py). The regret after k
trials is the best noiseless value among the first k minus the known optimum. One JSON line per
run is appended to --out (or printed); runs already there with at least as many trials are
skipped, and --shard K/N splits the seeds between processes.

--timing: the time of one ask + suggestions + tell after N finished trials (a study pre-filled
with N random trials, then given the sampler), for each N of --sizes: one untimed ask, then
--asks timed ones or as many as fit in --max-seconds.

Samplers:
  tpe        TPESampler(seed=s): Optuna 5's default TPE (multivariate for one objective,
             constant_liar=True)
  tpe-uni    TPESampler(seed=s, multivariate=False): the classic univariate TPE
  tpe-group  TPESampler(seed=s, multivariate=True, group=True): for conditional spaces; run
             only on problems with conditional parameters (elsewhere it is tpe)
  gp         GPSampler(seed=s): default settings (needs torch and scipy)
  random     RandomSampler(seed=s)
"""

import argparse
import json
import math
import os
import sys
import time
import warnings

import optuna

import external_problems
import suite_problems

SAMPLERS = ("tpe", "tpe-uni", "tpe-group", "gp", "random")


def make_sampler(name, seed):
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "tpe-uni":
        return optuna.samplers.TPESampler(seed=seed, multivariate=False)
    if name == "tpe-group":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise SystemExit(f"unknown sampler {name!r}: expected one of {', '.join(SAMPLERS)}")


def quiet():
    # ERROR: GPSampler warns at every trial of a conditional space that it samples the
    # conditional parameters at random.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")


def run_one(problem, sampler_name, seed, trials, checkpoints):
    noiseless = [math.inf] * trials

    def objective(trial):
        point = problem.suggest(trial)
        value, observed = problem.evaluate(point, seed, trial.number)
        noiseless[trial.number] = value
        return observed

    elapsed = [0.0] * trials
    start = time.perf_counter()

    def callback(study, trial):
        elapsed[trial.number] = time.perf_counter() - start

    study = optuna.create_study(direction="minimize", sampler=make_sampler(sampler_name, seed))
    # A trial whose sampler or objective raises is FAIL and counted (as on the C++ side).
    study.optimize(objective, n_trials=trials, callbacks=[callback], catch=(Exception,))
    failed = 0
    for t in study.trials:
        if t.state != optuna.trial.TrialState.COMPLETE:
            noiseless[t.number] = math.inf
            failed += 1
    regret, seconds = {}, {}
    best = math.inf
    for k in range(1, trials + 1):
        best = min(best, noiseless[k - 1])
        if k in checkpoints:
            regret[str(k)] = best - problem.optimum if math.isfinite(best) else None
            seconds[str(k)] = elapsed[k - 1]
    return {"bench": "suite", "impl": "optuna", "version": optuna.__version__,
            "sampler": sampler_name, "problem": problem.name, "seed": seed, "trials": trials,
            "regret": regret, "seconds": seconds, "failed": failed}


def time_asks(problem, sampler_name, n, asks, max_seconds, seed=0):
    """One untimed ask (imports, caches), then `asks` timed ones or as many as fit in
    `max_seconds` (at least one)."""
    study = optuna.create_study(direction="minimize",
                                sampler=optuna.samplers.RandomSampler(seed=seed))
    study.optimize(lambda t: problem.evaluate(problem.suggest(t))[0], n_trials=n)
    study.sampler = make_sampler(sampler_name, seed)

    def cycle():
        start = time.perf_counter()
        trial = study.ask()
        value = problem.evaluate(problem.suggest(trial))[0]
        study.tell(trial, value)
        return 1e3 * (time.perf_counter() - start)

    cycle()
    ms = []
    while len(ms) < asks and (not ms or sum(ms) < 1e3 * max_seconds):
        ms.append(cycle())
    ms.sort()
    mid = len(ms) // 2
    median = ms[mid] if len(ms) % 2 else 0.5 * (ms[mid - 1] + ms[mid])
    return {"bench": "suite-timing", "impl": "optuna", "version": optuna.__version__,
            "sampler": sampler_name, "problem": problem.name, "n_trials": n, "asks": len(ms),
            "median_ms": median, "mean_ms": sum(ms) / len(ms), "min_ms": ms[0]}


def done_runs(path):
    """(sampler, problem, seed) -> the most trials of the Optuna runs already in `path`."""
    done = {}
    if not path or not os.path.exists(path):
        return done
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.startswith("{"):
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                print(f"sampler_suite.py: {path} line {number} is not a run record; ignored",
                      file=sys.stderr)
                continue
            if r.get("bench") == "suite" and r.get("impl") == "optuna":
                key = (r["sampler"], r["problem"], r["seed"])
                done[key] = max(done.get(key, 0), r["trials"])
    return done


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="core",
                        help="names, groups or sets (all, core, quick), comma-separated")
    parser.add_argument("--samplers", default="tpe,tpe-uni,tpe-group,gp")
    parser.add_argument("--seeds", type=int, default=20, help="seeds F .. F+N-1")
    parser.add_argument("--first-seed", type=int, default=0, help="F, the first seed")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--gp-trials", type=int, default=None,
                        help="trials of the gp runs (default --trials): GPSampler's cost grows "
                             "with the trials")
    parser.add_argument("--checkpoints", default="25,50,100,200")
    parser.add_argument("--shard", default="0/1", help="K/N: the seeds s with (s - F) %% N == K")
    parser.add_argument("--out", default="", help="append JSON lines here, skipping runs done")
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--sizes", default="100,300", help="--timing: finished trials")
    parser.add_argument("--asks", type=int, default=5, help="--timing: asks timed per size")
    parser.add_argument("--max-seconds", type=float, default=30.0,
                        help="--timing: stop timing a size after this (at least one ask)")
    parser.add_argument("--lib", default=None, help="libbench_suite.so (default: the build's)")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch.set_num_threads for GPSampler (default 1: one core per "
                             "process, as the C++ runner)")
    args = parser.parse_args()
    quiet()
    try:
        suite = suite_problems.Suite(args.lib) if any(
            not external_problems.expand(x) for x in args.problems.split(",") if x) else None
        problems = external_problems.select(args.problems, suite)
    except (suite_problems.SuiteError, ValueError, ImportError) as e:
        raise SystemExit(f"sampler_suite.py: {e}")
    samplers = [s for s in args.samplers.split(",") if s]
    for s in samplers:
        make_sampler(s, 0)
    if "gp" in samplers:
        import torch
        torch.set_num_threads(args.torch_threads)
    out = open(args.out, "a") if args.out else sys.stdout

    def emit(record):
        out.write(json.dumps(record) + "\n")
        out.flush()

    if args.timing:
        for s in samplers:
            for p in problems:
                for n in [int(x) for x in args.sizes.split(",") if x]:
                    emit(time_asks(p, s, n, args.asks, args.max_seconds))
        return

    try:
        shard, shards = (int(x) for x in args.shard.split("/"))
        assert 0 <= shard < shards
    except (ValueError, AssertionError):
        raise SystemExit(f"--shard takes K/N with 0 <= K < N, not {args.shard!r}")
    done = done_runs(args.out)
    skipped = 0
    for p in problems:
        for s in samplers:
            if s == "tpe-group" and not any(q["parent"] for q in p.params):
                continue
            trials = args.gp_trials if s == "gp" and args.gp_trials else args.trials
            checkpoints = {k for k in (int(x) for x in args.checkpoints.split(",") if x)
                           if k <= trials} | {trials}
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                if (seed - args.first_seed) % shards != shard:
                    continue
                if done.get((s, p.name, seed), 0) >= trials:
                    skipped += 1
                    continue
                emit(run_one(p, s, seed, trials, checkpoints))
    if skipped:
        print(f"sampler_suite.py: {skipped} runs already in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
