#!/usr/bin/env python3
"""Optuna peer of bench/mo/mo_bench.cc: Optuna's samplers on the multi-objective problems.

Runs: for each problem, sampler and seed s, optuna.create_study(directions=["minimize"] * m,
sampler=...(seed=s)) optimized for --trials trials, the variables x0, x1, ... suggested as floats
in their bounds in that order, the objectives and the constraint (trial.set_constraint("c", v),
feasible when <= 0) computed by the C++ definitions through libbench_mo.so (ctypes), and the
hypervolume of the feasible COMPLETE trials among the first k measured by the same library. One
JSON line per run is appended to --out, seed by seed (every problem and sampler of a seed before
the next seed); runs already there are skipped; --shard K/N splits the seeds.

--timing: the time of one ask + tell after N finished trials (a study filled with N random
trials, then given the sampler): one untimed ask, then --asks timed ones.

Samplers:
  tpe     TPESampler(seed=s): Optuna 5's default, also for several objectives (univariate,
          gamma ceil(0.1 n), below split by non-domination rank and hypervolume)
  nsga2   NSGAIISampler(seed=s): population 50, uniform crossover, default settings
  random  RandomSampler(seed=s)
"""

import argparse
import ctypes
import json
import os
import sys
import time
import warnings

import optuna

SAMPLERS = ("tpe", "nsga2", "random")


class Problems:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        lib = self.lib
        lib.mo_count.restype = ctypes.c_int
        lib.mo_name.restype = ctypes.c_char_p
        lib.mo_name.argtypes = [ctypes.c_int]
        lib.mo_shape.argtypes = [ctypes.c_int] + [ctypes.POINTER(ctypes.c_int)] * 3
        lib.mo_bounds.argtypes = [ctypes.c_int] + [ctypes.POINTER(ctypes.c_double)] * 2
        lib.mo_eval.argtypes = [ctypes.c_int] + [ctypes.POINTER(ctypes.c_double)] * 3
        lib.mo_hypervolume.restype = ctypes.c_double
        lib.mo_hypervolume.argtypes = [ctypes.c_int, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_double),
                                       ctypes.POINTER(ctypes.c_double)]
        self.index = {lib.mo_name(i).decode(): i for i in range(lib.mo_count())}

    def shape(self, name):
        i = self.index[name]
        n, m, c = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self.lib.mo_shape(i, ctypes.byref(n), ctypes.byref(m), ctypes.byref(c))
        lo, hi = (ctypes.c_double * n.value)(), (ctypes.c_double * n.value)()
        self.lib.mo_bounds(i, lo, hi)
        return n.value, m.value, bool(c.value), list(lo), list(hi)

    def evaluate(self, name, x, m):
        xs = (ctypes.c_double * len(x))(*x)
        f, c = (ctypes.c_double * m)(), ctypes.c_double()
        self.lib.mo_eval(self.index[name], xs, f, ctypes.byref(c))
        return list(f), c.value

    def hypervolume(self, name, values, constraints, m):
        n = len(values)
        flat = (ctypes.c_double * (n * m))(*[v for row in values for v in row])
        cons = (ctypes.c_double * n)(*constraints)
        return self.lib.mo_hypervolume(self.index[name], n, flat, cons)


def make_sampler(name, seed):
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise SystemExit(f"unknown sampler {name!r}: expected one of {', '.join(SAMPLERS)}")


def objective_for(problems, name):
    n, m, constrained, lo, hi = problems.shape(name)

    def objective(trial):
        x = [trial.suggest_float(f"x{i}", lo[i], hi[i]) for i in range(n)]
        f, c = problems.evaluate(name, x, m)
        if constrained:
            trial.set_constraint("c", c)
        return f

    return objective, m


def run(problems, name, sampler, seed, trials, checkpoints):
    objective, m = objective_for(problems, name)
    study = optuna.create_study(directions=["minimize"] * m, sampler=make_sampler(sampler, seed))
    start = time.perf_counter()
    study.optimize(objective, n_trials=trials)
    seconds = time.perf_counter() - start
    hv = {}
    for k in checkpoints:
        values, cons = [], []
        for t in study.trials[:k]:
            if t.state != optuna.trial.TrialState.COMPLETE:
                continue
            values.append(list(t.values))
            cons.append(0.0 if all(v <= 0 for v in t.constraints.values()) else 1.0)
        hv[str(k)] = problems.hypervolume(name, values, cons, m)
    return {"bench": "mo", "impl": "optuna", "sampler": sampler, "problem": name, "seed": seed,
            "trials": trials, "hv": hv, "seconds": seconds}


def time_asks(problems, name, sampler, n, asks):
    objective, m = objective_for(problems, name)
    storage = optuna.storages.InMemoryStorage()
    filler = optuna.create_study(directions=["minimize"] * m, storage=storage,
                                 sampler=optuna.samplers.RandomSampler(seed=1),
                                 study_name="timing")
    filler.optimize(objective, n_trials=n)
    study = optuna.load_study(study_name="timing", storage=storage,
                              sampler=make_sampler(sampler, 1))

    def cycle():
        start = time.perf_counter()
        trial = study.ask()
        study.tell(trial, objective(trial))
        return 1e3 * (time.perf_counter() - start)

    cycle()
    ms = sorted(cycle() for _ in range(asks))
    mid = len(ms) // 2
    median = ms[mid] if len(ms) % 2 else 0.5 * (ms[mid - 1] + ms[mid])
    return {"bench": "mo-timing", "impl": "optuna", "sampler": sampler, "problem": name,
            "n_trials": n, "asks": asks, "median_ms": median, "min_ms": ms[0]}


def done_runs(path):
    done = set()
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if r.get("bench") == "mo":
                    done.add((r["problem"], r["sampler"], r["seed"], r["trials"]))
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True, help="libbench_mo.so")
    ap.add_argument("--problems", default="all")
    ap.add_argument("--samplers", default="tpe,nsga2")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--checkpoints", default="100,200")
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--out")
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--sizes", default="1000")
    ap.add_argument("--asks", type=int, default=5)
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    problems = Problems(args.lib)
    names = list(problems.index) if args.problems == "all" else args.problems.split(",")
    for name in names:
        if name not in problems.index:
            raise SystemExit(f"unknown problem {name!r}: expected one of {', '.join(problems.index)}")
    samplers = [s for s in args.samplers.split(",") if s]
    out = open(args.out, "a") if args.out else sys.stdout

    def emit(record):
        out.write(json.dumps(record) + "\n")
        out.flush()

    if args.timing:
        for name in names:
            for n in [int(s) for s in args.sizes.split(",")]:
                for sampler in samplers:
                    emit(time_asks(problems, name, sampler, n, args.asks))
        return
    shard, shards = (int(v) for v in args.shard.split("/"))
    checkpoints = [int(k) for k in args.checkpoints.split(",")]
    done = done_runs(args.out)
    # Seed by seed, so that an interrupted run leaves every problem with its first seeds.
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        if seed % shards != shard:
            continue
        for name in names:
            for sampler in samplers:
                if (name, sampler, seed, args.trials) not in done:
                    emit(run(problems, name, sampler, seed, args.trials, checkpoints))


if __name__ == "__main__":
    main()
