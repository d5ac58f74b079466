#!/usr/bin/env python3
"""The Optuna half of the multi-objective interop test (see run_interop.sh).

The problem, the same on both sides: over x, y in [-2, 2], minimize x^2 + y^2 and maximize
-((x - 1)^2 + y^2); its Pareto front lies along y = 0 between x = 0 and x = 1. Trial numbers
3 mod 7 fail.

  check_multi_objective.py read DB DUMP [--then-optimize]
      Loads the study of DUMP (written by write_study) and checks that Optuna sees its two
      directions, every trial's state, params and values as tuner has them, and the same
      best_trials (the front) as tuner's Study::best_trials(); with --then-optimize, continues the
      study with Optuna's default sampler for several objectives (its TPESampler), which must give
      the next trial numbers.
  check_multi_objective.py write DB
      Writes "from-optuna-mo" with Optuna's NSGAIISampler (population 8), 16 trials.
"""
import json
import sys

import optuna

optuna.logging.set_verbosity(optuna.logging.ERROR)


def objective(trial):
    x = trial.suggest_float("x", -2, 2)
    y = trial.suggest_float("y", -2, 2)
    if trial.number % 7 == 3:
        raise ValueError("the objective raised ValueError")
    return x * x + y * y, -((x - 1) ** 2 + y * y)


def read(url, dump, then_optimize):
    problems = []
    study = optuna.load_study(study_name=dump["name"], storage=url)
    directions = [d.name.lower() for d in study.directions]
    if directions != dump["directions"]:
        problems.append(f"directions {directions} != {dump['directions']}")
    trials = study.get_trials(deepcopy=False)
    if len(trials) != len(dump["trials"]):
        problems.append(f"{len(trials)} trials, tuner has {len(dump['trials'])}")
    for t, e in zip(trials, dump["trials"]):
        w = f"trial {e['number']}"
        if t.number != e["number"] or t.state.name != e["state"]:
            problems.append(f"{w}: number {t.number} state {t.state.name} != {e['state']}")
        if t.params != e["params"]:
            problems.append(f"{w}: params {t.params} != {e['params']}")
        if (t.values or []) != e["values"]:
            problems.append(f"{w}: values {t.values} != {e['values']}")
    best = sorted(t.number for t in study.best_trials)
    if best != sorted(dump["best_trials"]):
        problems.append(f"best_trials {best} != tuner's {sorted(dump['best_trials'])}")
    if then_optimize and not problems:
        before = len(trials)
        study.sampler = optuna.samplers.TPESampler(seed=5)
        study.optimize(objective, n_trials=5, catch=(ValueError,))
        numbers = [t.number for t in study.get_trials(deepcopy=False)]
        if numbers != list(range(before + 5)):
            problems.append(f"after optimize: numbers {numbers}")
        if not all(len(t.values) == 2 for t in study.trials if t.state.name == "COMPLETE"):
            problems.append("a COMPLETE trial without two values")
    for p in problems:
        print("MISMATCH:", p)
    print(f"check_multi_objective: {len(trials)} trials of {dump['name']} compared, "
          f"front {best}, {len(problems)} mismatches")
    return 1 if problems else 0


def main(argv):
    mode, db = argv[1], argv[2]
    url = f"sqlite:///{db}"
    print(f"check_multi_objective: optuna {optuna.__version__}, {mode} {db}")
    if mode == "write":
        study = optuna.create_study(
            study_name="from-optuna-mo", storage=url, directions=["minimize", "maximize"],
            sampler=optuna.samplers.NSGAIISampler(population_size=8, seed=3))
        study.optimize(objective, n_trials=16, catch=(ValueError,))
        return 0
    return read(url, json.load(open(argv[3])), "--then-optimize" in argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
