#!/usr/bin/env python3
"""The Optuna half of the interop test (see run_interop.sh).

  check_study.py read DB DUMP [--then-optimize]
      Loads every study of DUMP (written by write_study) from DB with optuna.load_study and
      compares every field of every trial with the dump; then, with --then-optimize, runs one
      more trial with Optuna in the first study and checks its number.
  check_study.py write DB
      Writes the study "from-optuna" with Optuna: COMPLETE, PRUNED and FAIL trials, a NaN and an
      inf intermediate value, user attributes, and one enqueued (WAITING) trial.

Exits 1 with a list of every difference found. Run it with TZ=UTC: Optuna shows datetimes in
local time, the dump holds naive UTC.
"""
import json
import math
import sys

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)


def from_dump(v):
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    return v


def same(a, b):
    """Equal values of the same type (True is not 1, 1.0 is not 1); NaN equals NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def fmt(dt):
    return "" if dt is None else dt.strftime("%Y-%m-%d %H:%M:%S.%f")


def compare_study(url, expected, problems):
    name = expected["name"]
    study = optuna.load_study(study_name=name, storage=url)
    where = f"study {name!r}"
    directions = [d.name.lower() for d in study.directions]
    if directions != expected["directions"]:
        problems.append(f"{where}: directions {directions} != {expected['directions']}")
    if study.user_attrs != expected["user_attrs"]:
        problems.append(f"{where}: user_attrs {study.user_attrs} != {expected['user_attrs']}")
    trials = study.get_trials(deepcopy=False)
    if len(trials) != len(expected["trials"]):
        problems.append(f"{where}: {len(trials)} trials != {len(expected['trials'])}")
    for t, e in zip(trials, expected["trials"]):
        w = f"{where} trial {e['number']}"
        if t.number != e["number"]:
            problems.append(f"{w}: number {t.number}")
        if t.state.name != e["state"]:
            problems.append(f"{w}: state {t.state.name} != {e['state']}")
        if set(t.params) != set(e["params"]):
            problems.append(f"{w}: params {sorted(t.params)} != {sorted(e['params'])}")
        for k, v in e["params"].items():
            if k in t.params and not same(t.params[k], v):
                problems.append(f"{w}: param {k} = {t.params[k]!r} != {v!r}")
        for k, d in e["distributions"].items():
            got = t.distributions.get(k)
            got = None if got is None else json.loads(optuna.distributions.distribution_to_json(got))
            if got != d:
                problems.append(f"{w}: distribution {k} = {got} != {d}")
        values = [from_dump(v) for v in e["values"]] or None
        if (t.values is None) != (values is None) or (
            values is not None
            and (len(values) != len(t.values) or not all(same(a, b) for a, b in zip(t.values, values)))
        ):
            problems.append(f"{w}: values {t.values} != {values}")
        iv = {int(k): from_dump(v) for k, v in e["intermediate_values"].items()}
        if set(iv) != set(t.intermediate_values) or not all(
            same(float(t.intermediate_values[k]), float(v)) for k, v in iv.items()
        ):
            problems.append(f"{w}: intermediate values {t.intermediate_values} != {iv}")
        if t.user_attrs != e["user_attrs"]:
            problems.append(f"{w}: user_attrs {t.user_attrs} != {e['user_attrs']}")
        if fmt(t.datetime_start) != e["datetime_start"]:
            problems.append(f"{w}: datetime_start {fmt(t.datetime_start)} != {e['datetime_start']}")
        if fmt(t.datetime_complete) != e["datetime_complete"]:
            problems.append(
                f"{w}: datetime_complete {fmt(t.datetime_complete)} != {e['datetime_complete']}"
            )
    if len(study.directions) == 1 and any(t.state.name == "COMPLETE" for t in trials):
        best = study.best_trial
        complete = [t for t in expected["trials"] if t["state"] == "COMPLETE"]
        pick = min if directions[0] == "minimize" else max
        want = pick(complete, key=lambda t: from_dump(t["values"][0]))
        if best.number != want["number"]:
            problems.append(f"{where}: best trial {best.number} != {want['number']}")
    return study


def objective(trial):
    lr = trial.suggest_float("lr", 1e-5, 1e-1, log=True)
    dropout = trial.suggest_float("dropout", 0.0, 0.5, step=0.1)
    layers = trial.suggest_int("layers", 1, 8)
    units = trial.suggest_int("units", 16, 256, step=16)
    opt = trial.suggest_categorical("optimizer", ["sgd", "adam", 3, 2.5, True])
    trial.set_user_attr("writer", "optuna")
    trial.set_user_attr("config", {"n": trial.number, "tags": ["a", "b"]})
    loss = lr * 100 + dropout + layers / 8 + units / 256 + (0.0 if opt == "adam" else 0.5)
    for step in range(3):
        value = loss + 1.0 / (step + 1)
        if trial.number == 1 and step == 1:
            value = float("nan")
        if trial.number == 3 and step == 0:
            value = float("-inf")
        trial.report(value, step)
    if trial.number == 2:
        raise optuna.TrialPruned()
    if trial.number == 4:
        raise ValueError("boom")
    return loss


def main(argv):
    mode, db = argv[1], argv[2]
    url = f"sqlite:///{db}"
    print(f"check_study: optuna {optuna.__version__}, {mode} {db}")
    if mode == "write":
        study = optuna.create_study(
            study_name="from-optuna", storage=url, sampler=optuna.samplers.RandomSampler(seed=1)
        )
        study.set_user_attr("origin", "optuna")
        study.optimize(objective, n_trials=6, catch=(ValueError,))
        study.enqueue_trial(
            {"lr": 0.001, "dropout": 0.2, "layers": 3, "units": 64, "optimizer": "adam"}
        )
        return 0
    dump = json.load(open(argv[3]))
    problems = []
    studies = [compare_study(url, s, problems) for s in dump["studies"]]
    if "--then-optimize" in argv and not problems:
        study = studies[0]
        before = len(study.trials)
        study.optimize(objective, n_trials=1)
        last = study.trials[-1]
        if last.number != before or len(study.trials) != before + 1:
            problems.append(f"optuna's next trial got number {last.number}, expected {before}")
    for p in problems:
        print("MISMATCH:", p)
    n = sum(len(s["trials"]) for s in dump["studies"])
    print(f"check_study: {n} trials compared, {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
