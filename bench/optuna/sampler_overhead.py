#!/usr/bin/env python3
"""Optuna peer of bench/sampler_overhead.cc: the marginal cost of one ask+tell.

For each sampler and each study size N: an in-memory study is pre-filled with N COMPLETE trials
whose parameters are drawn at random over the 10-dimensional mixed space (study.add_trials, the
analogue of the C++ benchmark writing them through Storage), then a few define-by-run
ask + suggest x10 + tell cycles are timed one by one. The first `--warmup` cycles are not timed.
Timing stops after `--asks` cycles, or once a cell has used `--max-seconds` (at least
`--min-asks` are timed), so that slow cells stay affordable; the number timed is printed.

Prints one JSON line per (sampler, N).
"""

import argparse
import math
import random
import statistics
import time

import optuna

import common


def random_params(rng, distributions):
    params = {}
    for name, d in distributions.items():
        if isinstance(d, optuna.distributions.CategoricalDistribution):
            params[name] = rng.choice(d.choices)
        elif isinstance(d, optuna.distributions.IntDistribution):
            if d.log:
                v = int(round(math.exp(rng.uniform(math.log(d.low - 0.5), math.log(d.high + 0.5)))))
            else:
                v = rng.randint(d.low, d.high)
            params[name] = min(max(v, d.low), d.high)
        elif d.log:
            params[name] = math.exp(rng.uniform(math.log(d.low), math.log(d.high)))
        else:
            params[name] = rng.uniform(d.low, d.high)
    return params


def prefill(study, n, seed):
    rng = random.Random(seed)
    distributions = common.mixed_distributions()
    trials = []
    for _ in range(n):
        params = random_params(rng, distributions)
        trials.append(
            optuna.trial.create_trial(
                params=params,
                distributions=distributions,
                value=common.mixed_objective(params),
            )
        )
    study.add_trials(trials)


def one_cycle(study):
    start = time.perf_counter()
    trial = study.ask()
    params = common.suggest_mixed(trial)
    study.tell(trial, common.mixed_objective(params))
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,5000,10000",
                        help="finished trials before timing, comma-separated")
    parser.add_argument("--samplers", default="random,tpe,tpe-mv,default")
    parser.add_argument("--asks", type=int, default=30, help="timed ask+tell per cell, at most")
    parser.add_argument("--min-asks", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=8.0,
                        help="stop timing a cell after this long (once --min-asks are done)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed ask+tell per cell")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    common.quiet()

    for sampler_name in args.samplers.split(","):
        for n in common.parse_list(args.sizes):
            sampler = common.make_sampler(sampler_name, args.seed)
            study = optuna.create_study(direction="minimize", sampler=sampler)
            fill_start = time.perf_counter()
            prefill(study, n, args.seed + n)
            fill_seconds = time.perf_counter() - fill_start
            for _ in range(args.warmup):
                one_cycle(study)
            times = []
            spent = 0.0
            while len(times) < args.asks and (len(times) < args.min_asks or
                                              spent < args.max_seconds):
                times.append(one_cycle(study))
                spent += times[-1]
            common.emit({
                "bench": "overhead",
                "sampler": sampler_name,
                "n_trials": n,
                "asks": len(times),
                "mean_ms": 1e3 * statistics.fmean(times),
                "median_ms": 1e3 * statistics.median(times),
                "min_ms": 1e3 * min(times),
                "fill_s": fill_seconds,
            })


if __name__ == "__main__":
    main()
