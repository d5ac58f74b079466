"""Loads a model version written by tuner's registry with MLflow and onnxruntime.

    check_mlflow.py DIR

DIR holds manifest.json (model_dir, input_dtype, input_shape, output_shape, study, trial,
metrics), input.u8 (raw uint8 pixels) and expected.f32 (float32, row-major: the engine's outputs
on those pixels scaled and normalized as its data pipeline does). Checks that
- MLflow reads the MLmodel: flavors onnx and python_function, the tensor signature
  (uint8 [-1, ...] in, float32 [-1, ...] out) and the lineage metadata;
- the Python ONNX checker (full check) accepts model.onnx;
- mlflow.pyfunc.load_model(model_dir).predict(raw pixels) and onnxruntime on model.onnx give the
  engine's outputs within |got - expected| <= 1e-4 * max(|expected|, 1), for the batch and for a
  batch of one: the normalization is in the model;
- pixels scaled to [0, 1] (float32) are refused by the signature, not answered.
"""
import json
import pathlib
import sys
import warnings

import mlflow
import mlflow.pyfunc
import numpy as np
import onnx
import onnxruntime as ort
from mlflow.models import Model

RTOL = 1e-4


def compare(name, got, want, errors):
    got = np.asarray(got)
    if got.shape != want.shape:
        errors.append(f"{name}: output shape {got.shape}, want {want.shape}")
        return
    err = np.abs(got.astype(np.float64) - want) / np.maximum(np.abs(want), 1.0)
    worst = float(err.max())
    print(f"{name}: output {list(got.shape)}, max relative error {worst:.2e}")
    if not worst <= RTOL:
        errors.append(f"{name}: max relative error {worst:.3e} > {RTOL}")


def main() -> int:
    work = pathlib.Path(sys.argv[1])
    manifest = json.loads((work / "manifest.json").read_text())
    model_dir = pathlib.Path(manifest["model_dir"])
    x = np.fromfile(work / "input.u8", dtype=np.uint8).reshape(manifest["input_shape"])
    expected = np.fromfile(work / "expected.f32", dtype="<f4").reshape(manifest["output_shape"])
    print(f"mlflow {mlflow.__version__}, onnxruntime {ort.__version__}, onnx {onnx.__version__}")
    errors = []

    meta = Model.load(str(model_dir / "MLmodel"))
    if set(meta.flavors) != {"onnx", "python_function"}:
        errors.append(f"flavors {sorted(meta.flavors)}")
    pyfunc_conf = meta.flavors["python_function"]
    if pyfunc_conf.get("loader_module") != "mlflow.onnx" or pyfunc_conf.get("data") != "model.onnx":
        errors.append(f"python_function flavor {pyfunc_conf}")
    inputs = meta.signature.inputs.to_dict()
    outputs = meta.signature.outputs.to_dict()
    want_in = [-1] + manifest["input_shape"][1:]
    want_out = [-1] + manifest["output_shape"][1:]
    def spec(s):
        return {"dtype": s["tensor-spec"]["dtype"], "shape": list(s["tensor-spec"]["shape"])}

    if len(inputs) != 1 or spec(inputs[0]) != {"dtype": manifest["input_dtype"], "shape": want_in}:
        errors.append(f"signature inputs {inputs}")
    if len(outputs) != 1 or spec(outputs[0]) != {"dtype": "float32", "shape": want_out}:
        errors.append(f"signature outputs {outputs}")
    md = meta.metadata or {}
    if md.get("study") != manifest["study"] or md.get("trial") != manifest["trial"]:
        errors.append(f"metadata study/trial {md.get('study')}/{md.get('trial')}")
    if md.get("metrics") != manifest["metrics"]:
        errors.append(f"metadata metrics {md.get('metrics')}")
    if not isinstance(md.get("params", {}).get("lr"), float):
        errors.append(f"metadata params {md.get('params')}")
    for f in ("python_env.yaml", "requirements.txt", "model.onnx", "engine/model.ckpt",
              "engine/model_spec.json"):
        if not (model_dir / f).is_file():
            errors.append(f"missing {f}")

    onnx.checker.check_model(onnx.load(str(model_dir / "model.onnx")), full_check=True)
    print("onnx checker: ok")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = mlflow.pyfunc.load_model(str(model_dir))
    for rows in (x.shape[0], 1):
        out = loaded.predict(x[:rows])
        if isinstance(out, dict):
            out = out["logits"]
        compare(f"mlflow.pyfunc batch {rows}", out, expected[:rows], errors)
    try:
        loaded.predict(x.astype(np.float32) / 255.0)
        errors.append("mlflow.pyfunc answered float32 pixels in [0, 1]; the signature takes uint8")
    except Exception as e:  # MlflowException: the dtype does not match the signature's
        print(f"mlflow.pyfunc refuses float32 pixels: {str(e).splitlines()[0][:120]}")

    session = ort.InferenceSession(str(model_dir / "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    for rows in (x.shape[0], 1):
        (got,) = session.run(["logits"], {"input": x[:rows]})
        compare(f"onnxruntime batch {rows}", got, expected[:rows], errors)

    for e in errors:
        print("FAIL " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
