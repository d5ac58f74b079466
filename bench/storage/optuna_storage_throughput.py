#!/usr/bin/env python3
"""The Optuna peer of storage_throughput.cc: the same work through Optuna's RDBStorage.

  optuna_storage_throughput.py life DB N [PROCS]
      PROCS processes (default 1) each run N trials on one file, one study: create, set 10
      params, report 10 intermediate values, finish (COMPLETE). Prints a JSON line.
  optuna_storage_throughput.py reads DB
      On the study "reads" that storage_throughput wrote in DB: lists all trials, the best
      trial, one trial's intermediate values. Prints a JSON line.
"""
import json
import multiprocessing
import sys
import time

import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

optuna.logging.set_verbosity(optuna.logging.WARNING)


def run_trials(db, n, study_id):
    storage = optuna.storages.RDBStorage(f"sqlite:///{db}")
    dist = FloatDistribution(0.0, 1.0)
    for i in range(n):
        trial_id = storage.create_new_trial(study_id)
        for p in range(10):
            storage.set_trial_param(trial_id, f"p{p}", ((i + p) % 97) / 97.0, dist)
        for s in range(10):
            storage.set_trial_intermediate_value(trial_id, s, s * 0.1)
        storage.set_trial_state_values(trial_id, TrialState.COMPLETE, [i * 0.001])


def life(db, n, procs):
    storage = optuna.storages.RDBStorage(f"sqlite:///{db}")
    study_id = storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "life")
    del storage
    start = time.perf_counter()
    if procs == 1:
        run_trials(db, n, study_id)
    else:
        workers = [multiprocessing.Process(target=run_trials, args=(db, n, study_id))
                   for _ in range(procs)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    elapsed = time.perf_counter() - start
    total = len(optuna.storages.RDBStorage(f"sqlite:///{db}").get_all_trials(study_id))
    print(json.dumps({"impl": "optuna " + optuna.__version__, "mode": "life", "procs": procs,
                      "trials": total, "seconds": round(elapsed, 4),
                      "trials_per_s": round(total / elapsed, 2)}))


def best_of(reps, f):
    best = float("inf")
    out = None
    for _ in range(reps):
        start = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - start)
    return best, out


def reads(db):
    storage = optuna.storages.RDBStorage(f"sqlite:///{db}")
    study_id = storage.get_study_id_from_name("reads")
    list_all, trials = best_of(1, lambda: storage.get_all_trials(study_id, deepcopy=False))
    best_trial, best = best_of(3, lambda: storage.get_best_trial(study_id))
    some = trials[len(trials) // 2]._trial_id
    one, t = best_of(20, lambda: storage.get_trial(some).intermediate_values)
    running, _ = best_of(5, lambda: storage.get_all_trials(
        study_id, deepcopy=False, states=(TrialState.RUNNING,)))
    print(json.dumps({"impl": "optuna " + optuna.__version__, "mode": "reads",
                      "trials": len(trials), "list_all_s": round(list_all, 5),
                      "best_trial_s": round(best_trial, 6), "best_value": best.value,
                      "one_trial_intermediate_s": round(one, 6), "steps": len(t),
                      "list_running_s": round(running, 6)}))


if __name__ == "__main__":
    if sys.argv[1] == "life":
        life(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    else:
        reads(sys.argv[2])
