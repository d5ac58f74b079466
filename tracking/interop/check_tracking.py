"""Reads a study back from an MLflow tracking server with MLflow's own client and compares it
with the study database tuner wrote.

    check_tracking.py runs URI STUDY DB [METRIC]   the parent run and one child run per trial,
                                                   each with every stored step metric and its
                                                   trial's files; with METRIC, each trial must
                                                   have reported it at every step
    check_tracking.py engine URI STUDY DB MODEL DATA REGISTRY
                                                   an engine study: per-epoch and system metrics,
                                                   the model in the registry, loaded with pyfunc
Exits non-zero naming every difference.
"""
import datetime
import gzip
import json
import math
import os
import pathlib
import re
import sqlite3
import sys

import mlflow
import numpy as np
from mlflow import MlflowClient

STATUS = {"COMPLETE": "FINISHED", "PRUNED": "KILLED", "FAIL": "FAILED", "RUNNING": "RUNNING"}


EPOCH = datetime.datetime(1970, 1, 1)


def to_ms(text):
    """A stored naive-UTC datetime as ms since the epoch, truncated as tuner does."""
    return (datetime.datetime.fromisoformat(text) - EPOCH) // datetime.timedelta(milliseconds=1)


def mlflow_key(name):
    """The metric key tuner logs for a name (tracking/trial_run.h mlflow_key)."""
    return re.sub(r"[^A-Za-z0-9_\-. :/]", "_", name[:250]) or "_"


def artifacts_dir(con, study_id):
    """The job's artifacts_dir of the sweep stored with the study, or None."""
    row = con.execute("SELECT value_json FROM study_system_attributes WHERE study_id = ? AND key = 'tuner:sweep'",
                      (study_id,)).fetchone()
    if row is None:
        return None
    return json.loads(json.loads(row[0]))["file"]["job"].get("artifacts_dir")


def folder_files(folder):
    """Relative path -> size of every file below `folder` (none when it does not exist)."""
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = pathlib.Path(root) / name
            out[path.relative_to(folder).as_posix()] = path.stat().st_size
    return out


def run_artifacts(client, run_id, path=None):
    """Relative path -> size of every artifact of the run."""
    out = {}
    for f in client.list_artifacts(run_id, path):
        if f.is_dir:
            out.update(run_artifacts(client, run_id, f.path))
        else:
            out[f.path] = f.file_size
    return out


def study_trials(db, study):
    con = sqlite3.connect(db)
    (study_id,) = con.execute("SELECT study_id FROM studies WHERE study_name = ?", (study,)).fetchone()
    folders = artifacts_dir(con, study_id)
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
        metrics = {}  # name -> {step: (value, ms)}
        for step, name, value, when in con.execute(
                "SELECT step, name, value, datetime FROM tuner_trial_step_metrics WHERE trial_id = ?",
                (trial_id,)):
            metrics.setdefault(name, {})[step] = (math.nan if value is None else value, to_ms(when))
        folder = pathlib.Path(folders) / f"trial-{number}" if folders else None
        trials[number] = {"state": state, "params": params, "steps": steps, "metrics": metrics,
                          "folder": folder}
    return trials


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=0)


def check_step_metrics(client, run, n, t, errors):
    """Every stored step metric of trial n in its run, at its step, with its stored time."""
    for name, stored in t["metrics"].items():
        history = {}
        for m in client.get_metric_history(run.info.run_id, mlflow_key(name)):
            history.setdefault(m.step, []).append((m.value, m.timestamp))
        for step, (value, ms) in stored.items():
            if not any(same(v, value) and ts == ms for v, ts in history.get(step, [])):
                errors.append(f"trial {n}: {name} at step {step}: {history.get(step)}, "
                              f"want {value} at {ms}")


def check_files(client, run, n, t, errors):
    """Every file of trial n's folder among its run's artifacts, of the same size; other
    artifacts only under model/ (the registry's)."""
    files = folder_files(t["folder"]) if t["folder"] else {}
    artifacts = run_artifacts(client, run.info.run_id)
    for path, size in files.items():
        # MLflow lists an empty file without a size (a stopped trial may leave one).
        got = artifacts.get(path, "missing")
        if got is None:
            got = 0
        if got != size:
            errors.append(f"trial {n}: artifact {path}: size {got}, the file's {size}")
    extra = sorted(p for p in artifacts if p not in files and not p.startswith("model/"))
    if extra:
        errors.append(f"trial {n}: artifacts not in its folder {t['folder']}: {extra}")
    return files


def child_runs(client, study):
    exp = client.get_experiment_by_name(study)
    if exp is None:
        raise SystemExit(f"no MLflow experiment '{study}'")
    runs = client.search_runs([exp.experiment_id], f"tags.`tuner.study` = '{study}'", max_results=5000)
    parents = [r for r in runs if r.data.tags.get("tuner.role") == "study"]
    children = [r for r in runs if "tuner.trial_number" in r.data.tags]
    return exp, parents, children


def check_runs(uri, study, db, objective="loss", expect_metric=None):
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
        check_step_metrics(client, r, n, t, errors)
        files = check_files(client, r, n, t, errors)
        if expect_metric:
            steps = sorted({m.step for m in client.get_metric_history(r.info.run_id, expect_metric)})
            if steps != sorted(t["steps"]):
                errors.append(f"trial {n}: {expect_metric} at steps {steps}, want {sorted(t['steps'])}")
            if not files:
                errors.append(f"trial {n}: no files in its folder {t['folder']}")
    if parent.info.status != "FINISHED":
        errors.append(f"study run status {parent.info.status}")
    print(f"{study}: experiment {exp.experiment_id}, study run {parent.info.run_id}, "
          f"{len(children)} trial runs, {sum(len(t['steps']) for t in trials.values())} steps, "
          f"{sum(len(m) for t in trials.values() for m in t['metrics'].values())} step metrics and "
          f"{sum(len(folder_files(t['folder'])) for t in trials.values() if t['folder'])} files checked")
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
        errors, _ = check_runs(*sys.argv[2:5], expect_metric=sys.argv[5] if len(sys.argv) > 5 else None)
    elif mode == "engine":
        errors = check_engine(*sys.argv[2:8])
    else:
        raise SystemExit(f"unknown mode {mode}")
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
