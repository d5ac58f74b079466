"""Loads the model a command trial's own scikit-learn program saved, as tuner registered it, with
MLflow itself.

    check_user_model.py URI MODEL REGISTRY_DIR DB

Checks that
- MLflow's model registry has MODEL with the alias champion, on the version the file registry
  REGISTRY_DIR made champion, tagged with the study and trial it came from;
- mlflow.pyfunc.load_model("models:/MODEL@champion") loads it (a sklearn model) and predicts the
  iris test half with the accuracy the trial recorded in DB;
- the file registry's version directory loads the same way and holds the MLmodel as the trial's
  program wrote it (flavors python_function and sklearn).
"""
import json
import pathlib
import sqlite3
import sys
import warnings

import mlflow
import mlflow.pyfunc
from mlflow import MlflowClient
from mlflow.models import Model
from sklearn.datasets import load_iris


def main() -> int:
    uri, name, registry_dir, db = sys.argv[1:]
    errors = []
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)
    model = json.loads((pathlib.Path(registry_dir) / name / "registry.json").read_text())
    champion = model["aliases"]["champion"]
    version = next(v for v in model["versions"] if v["version"] == champion)
    if version.get("model_format") != "mlflow":
        errors.append(f"file registry: model_format {version.get('model_format')}, want mlflow")
    trial = version["trial"]
    (recorded,) = sqlite3.connect(db).execute(
        "SELECT v.value FROM trial_values v JOIN trials t ON t.trial_id = v.trial_id "
        "WHERE t.number = ?", (trial,)).fetchone()

    mv = client.get_model_version_by_alias(name, "champion")
    if mv.tags.get("tuner.registry_version") != str(champion):
        errors.append(f"MLflow's champion mirrors version {mv.tags.get('tuner.registry_version')}, "
                      f"the file registry's champion is {champion}")
    if mv.tags.get("tuner.trial") != str(trial):
        errors.append(f"MLflow's champion: tag tuner.trial {mv.tags.get('tuner.trial')}, want {trial}")

    x, y = load_iris(return_X_y=True)
    x_test, y_test = x[1::2], y[1::2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for where in (f"models:/{name}@champion", str(pathlib.Path(registry_dir) / name / str(champion))):
            loaded = mlflow.pyfunc.load_model(where)
            accuracy = float((loaded.predict(x_test) == y_test).mean())
            print(f"{where}: {loaded.metadata.flavors.keys() - {'python_function'}} model, "
                  f"accuracy {accuracy:.4f} (trial {trial} recorded {recorded:.4f})")
            if abs(accuracy - recorded) > 1e-9:
                errors.append(f"{where}: accuracy {accuracy}, the trial recorded {recorded}")
    meta = Model.load(str(pathlib.Path(registry_dir) / name / str(champion) / "MLmodel"))
    if not {"python_function", "sklearn"} <= set(meta.flavors):
        errors.append(f"flavors {sorted(meta.flavors)}")

    for e in errors:
        print("FAIL " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
