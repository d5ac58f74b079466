#!/usr/bin/env python3
"""The Optuna half of the constraints interop test (see run_interop.sh).

The problem, the same on both sides: minimize (x - 1.5)^2 + (y + 2)^2 over x, y in [-10, 10]
subject to x >= 5 and y <= 8, whose constraint values are [5 - x, y - 8] (feasible when every
value is <= 0). The unconstrained best, x = 1.5, is infeasible.

  check_constraints.py read DB DUMP [--then-optimize]
      Loads the study of DUMP (written by write_study) and checks that Optuna reads every
      trial's constraints as tuner has them (FrozenTrial.constraints, and the "constraints"
      system attribute for tuner's trials), that study.best_trial is tuner's best_trial (the best
      feasible trial) and study.best_trials feasible; with --then-optimize, continues the study
      with Optuna's TPESampler and its constraints_func, which must find tuner's trials'
      constraints: most of its trials are then feasible.
  check_constraints.py write DB
      Writes "from-optuna-constrained" with Optuna's TPESampler and constraints_func (the list
      form), and, with Optuna 5's Trial.set_constraint, "from-optuna-named" (the named form).
"""
import json
import sys
import warnings

import optuna

# ERROR: the trials that fail on purpose are not worth a traceback each.
optuna.logging.set_verbosity(optuna.logging.ERROR)
# constraints_func is deprecated from Optuna 5 in favour of Trial.set_constraint; both are tested.
warnings.simplefilter("ignore", FutureWarning)
warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)


def value_of(x, y):
    return (x - 1.5) ** 2 + (y + 2) ** 2


def constraints_of_params(params):
    return [5 - params["x"], params["y"] - 8]


def constraints_func(trial):
    return constraints_of_params(trial.params)


def from_dump(v):
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    return v


def optuna_constraints(t):
    """A trial's constraints as Optuna reads them: {name: value}."""
    if hasattr(t, "constraints"):  # Optuna 5
        return dict(t.constraints)
    listed = t.system_attrs.get("constraints")
    return {} if listed is None else {str(i): v for i, v in enumerate(listed)}


def feasible(constraints):
    return all(v <= 0 for v in constraints.values())


def objective(trial, named=False):
    x = trial.suggest_float("x", -10, 10)
    y = trial.suggest_float("y", -10, 10)
    if named:
        c = constraints_of_params({"x": x, "y": y})
        trial.set_constraint("x_min", c[0])
        trial.set_constraint("y_max", c[1])
    value = value_of(x, y)
    trial.report(value, 0)
    if trial.number % 10 == 3:
        raise optuna.TrialPruned()
    if trial.number % 10 == 7:
        raise ValueError("boom")
    return value


def read(url, dump, then_optimize, problems):
    name = dump["name"]
    study = optuna.load_study(study_name=name, storage=url)
    trials = study.get_trials(deepcopy=False)
    if len(trials) != len(dump["trials"]):
        problems.append(f"{len(trials)} trials != {len(dump['trials'])}")
    n_constrained = 0
    for t, e in zip(trials, dump["trials"]):
        w = f"study {name!r} trial {e['number']}"
        if t.state.name != e["state"]:
            problems.append(f"{w}: state {t.state.name} != {e['state']}")
        want = {k: from_dump(v) for k, v in e["constraints"].items()}
        got = optuna_constraints(t)
        if got != want:  # exact: the same doubles
            problems.append(f"{w}: constraints {got} (Optuna) != {want} (tuner)")
        if want:
            n_constrained += 1
        if t.state.name in ("COMPLETE", "PRUNED") and not want:
            problems.append(f"{w}: a {t.state.name} trial without constraints")
        if want and t.state.name in ("COMPLETE", "PRUNED"):
            expect = constraints_of_params(t.params)
            if sorted(want.values()) != sorted(expect):
                problems.append(f"{w}: constraints {want} are not {expect} for {t.params}")
    if n_constrained == 0:
        problems.append(f"study {name!r}: no trial has constraints")

    complete = [t for t in trials if t.state.name == "COMPLETE"]
    feasible_complete = [t for t in complete if feasible(optuna_constraints(t))]
    if not feasible_complete or len(feasible_complete) == len(complete):
        problems.append(
            f"study {name!r}: {len(feasible_complete)} of {len(complete)} COMPLETE trials are "
            "feasible; the test needs both kinds"
        )
    if dump["best"] is None:
        problems.append(f"study {name!r}: tuner found no best trial")
    elif feasible_complete:
        best = study.best_trial
        if best.number != dump["best"]:
            problems.append(f"study {name!r}: Optuna's best trial {best.number} != tuner's "
                            f"{dump['best']}")
        unconstrained = min(complete, key=lambda t: t.value)
        if not feasible(optuna_constraints(unconstrained)) and best.number == unconstrained.number:
            problems.append(f"study {name!r}: the best trial is infeasible")
        if any(not feasible(optuna_constraints(t)) for t in study.best_trials):
            problems.append(f"study {name!r}: best_trials holds an infeasible trial")

    if then_optimize and not problems:
        # Optuna's TPE continues from tuner's trials (its constraints_func for its own): the
        # infeasible best values that tuner's trials hold must not draw it to x = 1.5.
        study = optuna.load_study(
            study_name=name,
            storage=url,
            sampler=optuna.samplers.TPESampler(seed=3, constraints_func=constraints_func),
        )
        before = len(study.trials)
        study.optimize(objective, n_trials=20, catch=(ValueError,))
        mine = [t for t in study.trials[before:] if t.state.name == "COMPLETE"]
        ok = [t for t in mine if feasible(optuna_constraints(t))]
        print(f"check_constraints: {len(ok)} of Optuna's {len(mine)} COMPLETE trials are feasible")
        if len(ok) * 2 < len(mine):
            problems.append(
                f"study {name!r}: only {len(ok)} of Optuna's {len(mine)} trials are feasible: "
                "its TPE does not seem to read tuner's constraints"
            )


def write(url):
    study = optuna.create_study(
        study_name="from-optuna-constrained",
        storage=url,
        sampler=optuna.samplers.TPESampler(
            seed=1, n_startup_trials=20, constraints_func=constraints_func
        ),
    )
    study.optimize(objective, n_trials=24, catch=(ValueError,))
    if hasattr(optuna.trial.Trial, "set_constraint"):
        named = optuna.create_study(
            study_name="from-optuna-named",
            storage=url,
            sampler=optuna.samplers.RandomSampler(seed=2),
        )
        named.optimize(lambda t: objective(t, named=True), n_trials=24, catch=(ValueError,))


def main(argv):
    mode, db = argv[1], argv[2]
    url = f"sqlite:///{db}"
    print(f"check_constraints: optuna {optuna.__version__}, {mode} {db}")
    if mode == "write":
        write(url)
        print("check_constraints: named form", "written" if hasattr(optuna.trial.Trial,
              "set_constraint") else "skipped (Optuna < 5)")
        return 0
    problems = []
    read(url, json.load(open(argv[3])), "--then-optimize" in argv, problems)
    for p in problems:
        print("MISMATCH:", p)
    print(f"check_constraints: {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
