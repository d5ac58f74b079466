#!/usr/bin/env python3
"""Optuna's peer of dispatch_throughput --runner noop (bench/dispatch/dispatch_throughput.cc).

PROCS processes share one study on one SQLite file (Optuna's RDBStorage), each running
study.optimize() with a RandomSampler on the same space (x, y uniform in [-10, 10]) and the same
no-op objective (x^2 + y^2, returned at once), until TRIALS trials are done in all.

    optuna_dispatch.py DB TRIALS [PROCS]

Prints one JSON line: `seconds` from releasing the processes (after Optuna is imported and the
study loaded in each) until the last one ends, trials_per_s, and the ask-to-commit latency of each
trial (datetime_complete - datetime_start as stored: the same definition as tuner's).
Optuna's per-trial INFO log lines are silenced (warnings stay), as tuner's coordinator writes none.
"""
import json
import multiprocessing as mp
import os
import sys
import time

import optuna


def objective(trial):
    x = trial.suggest_float("x", -10.0, 10.0)
    y = trial.suggest_float("y", -10.0, 10.0)
    return x * x + y * y


def percentile(sorted_values, q):
    """Linear interpolation between the closest ranks (numpy's default, and tuner's)."""
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def storage_for(db):
    # A generous busy timeout: four writers on one file wait for each other's locks.
    return optuna.storages.RDBStorage(
        f"sqlite:///{db}", engine_kwargs={"connect_args": {"timeout": 60}})


def worker(db, n, seed, barrier):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name="dispatch", storage=storage_for(db),
                              sampler=optuna.samplers.RandomSampler(seed=seed))
    barrier.wait()
    study.optimize(objective, n_trials=n)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: optuna_dispatch.py DB TRIALS [PROCS]")
    db, trials = sys.argv[1], int(sys.argv[2])
    procs = int(sys.argv[3]) if len(sys.argv) == 4 else 4
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    optuna.create_study(study_name="dispatch", storage=storage_for(db))
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(procs + 1)
    shares = [trials // procs + (1 if i < trials % procs else 0) for i in range(procs)]
    workers = [ctx.Process(target=worker, args=(db, shares[i], i + 1, barrier))
               for i in range(procs)]
    for w in workers:
        w.start()
    barrier.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    seconds = time.perf_counter() - start
    if any(w.exitcode != 0 for w in workers):
        sys.exit("optuna_dispatch.py: a worker process failed")

    study = optuna.load_study(study_name="dispatch", storage=storage_for(db))
    done = [t for t in study.get_trials(deepcopy=False)
            if t.state == optuna.trial.TrialState.COMPLETE]
    latency_ms = sorted((t.datetime_complete - t.datetime_start).total_seconds() * 1000
                        for t in done)
    first = min(t.datetime_start for t in done)
    last = max(t.datetime_complete for t in done)
    print(json.dumps({
        "impl": "optuna", "version": optuna.__version__, "runner": "noop", "procs": procs,
        "trials": trials, "complete": len(done), "seconds": seconds,
        "trials_per_s": len(done) / seconds,
        "first_ask_to_last_commit_s": (last - first).total_seconds(),
        "latency_median_ms": percentile(latency_ms, 0.5),
        "latency_p90_ms": percentile(latency_ms, 0.9),
    }))
    return 0 if len(done) == trials else 1


if __name__ == "__main__":
    sys.exit(main())
