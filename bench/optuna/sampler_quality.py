#!/usr/bin/env python3
"""Optuna peer of bench/sampler_quality.cc: the regret of each sampler on known functions.

For each sampler, function and seed: study.optimize() for the largest checkpoint's number of
trials (define-by-run, one suggest_float per dimension), then the regret (best value among the
first k trials minus the known optimum) at every checkpoint k.

Prints one JSON line per (sampler, function, seed); the driver computes medians and IQRs.
`--jobs` runs seeds in parallel processes (results do not depend on it).
"""

import argparse
import concurrent.futures
import time

import optuna

import common


def run_one(sampler_name, function_name, seed, checkpoints):
    common.quiet()
    function, bounds, optimum = common.FUNCTIONS[function_name]

    def objective(trial):
        x = [trial.suggest_float(f"x{i}", low, high) for i, (low, high) in enumerate(bounds)]
        return function(x)

    study = optuna.create_study(direction="minimize",
                                sampler=common.make_sampler(sampler_name, seed))
    start = time.perf_counter()
    study.optimize(objective, n_trials=max(checkpoints))
    seconds = time.perf_counter() - start
    values = [t.value for t in sorted(study.trials, key=lambda t: t.number)]
    regrets = {}
    for k in checkpoints:
        regrets[str(k)] = min(values[:k]) - optimum
    return {
        "bench": "quality",
        "sampler": sampler_name,
        "function": function_name,
        "seed": seed,
        "regret": regrets,
        "seconds": seconds,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samplers", default="random,tpe,tpe-mv,default")
    parser.add_argument("--functions", default=",".join(common.FUNCTIONS))
    parser.add_argument("--seeds", type=int, default=20, help="seeds F .. F+N-1")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="F, the first seed (held-out seeds: a later F)")
    parser.add_argument("--checkpoints", default="100,200", help="trial counts, comma-separated")
    parser.add_argument("--jobs", type=int, default=1, help="parallel processes")
    args = parser.parse_args()
    common.quiet()

    checkpoints = common.parse_list(args.checkpoints)
    tasks = [(s, f, seed, checkpoints)
             for s in args.samplers.split(",")
             for f in args.functions.split(",")
             for seed in range(args.first_seed, args.first_seed + args.seeds)]
    for s, f, _, _ in tasks:
        common.make_sampler(s, 0)
        if f not in common.FUNCTIONS:
            common.fail(f"unknown function {f!r}: expected one of {', '.join(common.FUNCTIONS)}")
    if args.jobs <= 1:
        for task in tasks:
            common.emit(run_one(*task))
    else:
        with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
            for record in pool.map(run_one, *zip(*tasks)):
                common.emit(record)


if __name__ == "__main__":
    main()
