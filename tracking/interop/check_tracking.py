"""Reads a study back from an MLflow tracking server with MLflow's own client and compares it
with the study database tuner wrote.

    check_tracking.py runs URI STUDY DB            the parent run and one child run per trial
    check_tracking.py engine URI STUDY DB MODEL DATA REGISTRY
                                                   an engine study: per-epoch and system metrics,
                                                   the model in the registry, loaded with pyfunc
Exits non-zero naming every difference.
"""
import gzip
import json
import math
import pathlib
import sqlite3
import sys

import mlflow
import numpy as np
from mlflow import MlflowClient

STATUS = {"COMPLETE": "FINISHED", "PRUNED": "KILLED", "FAIL": "FAILED", "RUNNING": "RUNNING"}


def study_trials(db, study):
    con = sqlite3.connect(db)
    (study_id,) = con.execute("SELECT study_id FROM studies WHERE study_name = ?", (study,)).fetchone()
    trials = {}
    for trial_id, number, state in con.execute(
            "SELECT trial_id, number, state FROM trials WHERE study_id = ? AND state != 'WAITING'",
            (study_id,)):
        params = {}
        for name, value, dist in con.execute(
                "SELECT param_name, param_value, distribution_json FROM trial_params WHERE trial_id = ?",
                (trial_id,)):
            d = json.loads(dist)
            params[name] = (d["attributes"]["choices"][int(value)]
                            if d["name"] == "CategoricalDistribution" else value)
        steps = dict(con.execute(
            "SELECT step, intermediate_value FROM trial_intermediate_values WHERE trial_id = ?",
            (trial_id,)).fetchall())
        trials[number] = {"state": state, "params": params, "steps": steps}
    return trials


def child_runs(client, study):
    exp = client.get_experiment_by_name(study)
    if exp is None:
        raise SystemExit(f"no MLflow experiment '{study}'")
    runs = client.search_runs([exp.experiment_id], f"tags.`tuner.study` = '{study}'", max_results=5000)
    parents = [r for r in runs if r.data.tags.get("tuner.role") == "study"]
    children = [r for r in runs if "tuner.trial_number" in r.data.tags]
    return exp, parents, children


def check_runs(uri, study, db, objective="loss"):
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)
    errors = []
    trials = study_trials(db, study)
    exp, parents, children = child_runs(client, study)
    if len(parents) != 1:
        errors.append(f"{len(parents)} study runs, want 1")
        return errors, None
    parent = parents[0]
    numbers = sorted(int(r.data.tags["tuner.trial_number"]) for r in children)
    if numbers != sorted(trials):
        errors.append(f"child runs of trials {numbers}, the study has {sorted(trials)}")
    # mlflow.search_runs (the pandas form MLflow users call) sees the same runs.
    frame = mlflow.search_runs([exp.experiment_id])
    if len(frame) != len(children) + 1:
        errors.append(f"mlflow.search_runs: {len(frame)} runs, want {len(children) + 1}")
    for r in children:
        n = int(r.data.tags["tuner.trial_number"])
        t = trials.get(n)
        if t is None:
            continue
        if r.data.tags.get("mlflow.parentRunId") != parent.info.run_id:
            errors.append(f"trial {n}: parent {r.data.tags.get('mlflow.parentRunId')}")
        if r.info.run_name != f"trial-{n}":
            errors.append(f"trial {n}: run name {r.info.run_name}")
        if r.data.tags.get("tuner.state") != t["state"] or r.info.status != STATUS[t["state"]]:
            errors.append(f"trial {n}: state {r.data.tags.get('tuner.state')}/{r.info.status}, "
                          f"the study has {t['state']}")
        for name, value in t["params"].items():
            got = r.data.params.get(name)
            same = got is not None and (float(got) == value if isinstance(value, float) else got == str(value))
            if not same:
                errors.append(f"trial {n}: param {name} = {got}, the study has {value}")
        history = client.get_metric_history(r.info.run_id, objective)
        by_step = {}
        for m in history:
            by_step.setdefault(m.step, []).append(m.value)
        for step, value in t["steps"].items():
            if not any(math.isclose(v, value, rel_tol=1e-12, abs_tol=0) for v in by_step.get(step, [])):
                errors.append(f"trial {n}: {objective} at step {step}: {by_step.get(step)}, want {value}")
        extra = sorted(set(by_step) - set(t["steps"]) - {max(t["steps"], default=0)})
        if extra:
            errors.append(f"trial {n}: {objective} at steps the study does not have: {extra}")
        if len(history) > len(t["steps"]) + 1:
            errors.append(f"trial {n}: {len(history)} values of {objective} for {len(t['steps'])} steps")
    if parent.info.status != "FINISHED":
        errors.append(f"study run status {parent.info.status}")
    print(f"{study}: experiment {exp.experiment_id}, study run {parent.info.run_id}, "
          f"{len(children)} trial runs, {sum(len(t['steps']) for t in trials.values())} steps checked")
    return errors, (client, exp, parent, children)


def read_idx_images(path, n):
    with gzip.open(path, "rb") as f:
        data = f.read()
    count, rows, cols = (int.from_bytes(data[i:i + 4], "big") for i in (4, 8, 12))
    return np.frombuffer(data, dtype=np.uint8, offset=16)[:n * rows * cols].reshape(n, 1, rows, cols)


def read_idx_labels(path, n):
    with gzip.open(path, "rb") as f:
        data = f.read()
    return np.frombuffer(data, dtype=np.uint8, offset=8)[:n]


def check_engine(uri, study, db, model, data, registry):
    errors, found = check_runs(uri, study, db, objective="val_accuracy")
    if found is None:
        return errors
    client, exp, parent, children = found
    epochs = None
    for r in children:
        for key in ("train_loss", "val_loss", "samples_per_second", "peak_rss_mb", "lr"):
            history = sorted(client.get_metric_history(r.info.run_id, key), key=lambda m: (m.step, m.timestamp))
            steps = sorted({m.step for m in history})
            epochs = epochs or steps
            if steps != epochs or not steps:
                errors.append(f"run {r.info.run_name}: {key} at steps {steps}, want {epochs}")
            times = [m.timestamp for m in history]
            if times != sorted(times):
                errors.append(f"run {r.info.run_name}: {key}'s times go back: {times}")
        for key in ("num_params", "test_accuracy", "latency_ms", "checkpoint_bytes"):
            if key not in r.data.metrics:
                errors.append(f"run {r.info.run_name}: no final metric {key}")
        if not r.data.metrics.get("samples_per_second", 0) > 0:
            errors.append(f"run {r.info.run_name}: samples_per_second {r.data.metrics.get('samples_per_second')}")
    # The registry: the champion is the file registry's, its run the trial's, its model loads.
    file_model = json.loads((pathlib.Path(registry) / model / "registry.json").read_text())
    mlflow_aliases = {}
    for alias, version in client.get_registered_model(model).aliases.items():
        v = client.get_model_version(model, version)
        mlflow_aliases[alias] = int(v.tags["tuner.registry_version"])
    if mlflow_aliases != file_model["aliases"]:
        errors.append(f"MLflow aliases {mlflow_aliases}, the file registry's {file_model['aliases']}")
    champion = client.get_model_version_by_alias(model, "champion")
    run = client.get_run(champion.run_id)
    trial = int(run.data.tags["tuner.trial_number"])
    file_version = next(v for v in file_model["versions"] if v["version"] == int(champion.tags["tuner.registry_version"]))
    if file_version["trial"] != trial:
        errors.append(f"champion's run is trial {trial}, the file registry's champion trial {file_version['lineage']['trial']}")
    if not champion.source.startswith(run.info.artifact_uri):
        errors.append(f"champion source {champion.source} is not in its run's artifacts {run.info.artifact_uri}")
    loaded = mlflow.pyfunc.load_model(f"models:/{model}@champion")
    n = 1000
    x = read_idx_images(pathlib.Path(data) / "t10k-images-idx3-ubyte.gz", n)
    y = read_idx_labels(pathlib.Path(data) / "t10k-labels-idx1-ubyte.gz", n)
    out = loaded.predict(x)
    logits = np.asarray(next(iter(out.values())) if isinstance(out, dict) else out)
    accuracy = float((logits.argmax(axis=1) == y).mean())
    recorded = run.data.metrics["test_accuracy"]
    print(f"models:/{model}@champion: version {champion.version} (file registry {file_version['version']}), "
          f"trial {trial}; pyfunc accuracy on {n} test images {accuracy:.3f}, the run's test_accuracy {recorded:.3f}")
    if abs(accuracy - recorded) > 0.002:
        errors.append(f"pyfunc accuracy {accuracy} differs from the run's test_accuracy {recorded}")
    return errors


def main():
    mode = sys.argv[1]
    if mode == "runs":
        errors, _ = check_runs(*sys.argv[2:5])
    elif mode == "engine":
        errors = check_engine(*sys.argv[2:8])
    else:
        raise SystemExit(f"unknown mode {mode}")
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
