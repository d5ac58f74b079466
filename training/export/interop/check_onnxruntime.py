"""Runs the models written by onnx_export_driver in onnxruntime and compares with the engine.

    check_onnxruntime.py DIR

DIR holds manifest.json and, per model NAME, NAME.onnx, NAME.input.f32 (NAME.input.u8 for a
model whose input_dtype is uint8: raw pixels, which the graph normalizes itself) and
NAME.expected.f32 (float32, row-major). Each model must pass onnx.checker (full check, with shape inference), have
the input "input" and the output "logits" with a dynamic batch dim, and give the engine's outputs
within a relative error of 1e-4 (|got - expected| <= 1e-4 * max(|expected|, 1)) for the whole
batch and for a batch of one.
"""
import json
import pathlib
import sys

import numpy as np
import onnx
import onnxruntime as ort

RTOL = 1e-4


def check(directory: pathlib.Path, entry: dict) -> list:
    name = entry["name"]
    errors = []
    path = directory / f"{name}.onnx"
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    dtype = entry.get("input_dtype", "float32")
    suffix, np_dtype = ("u8", np.uint8) if dtype == "uint8" else ("f32", "<f4")
    x = np.fromfile(directory / f"{name}.input.{suffix}", dtype=np_dtype).reshape(
        entry["input_shape"])
    expected = np.fromfile(directory / f"{name}.expected.f32", dtype="<f4").reshape(
        entry["output_shape"])

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if [i.name for i in inputs] != ["input"] or [o.name for o in outputs] != ["logits"]:
        errors.append(f"{name}: inputs {[i.name for i in inputs]}, outputs "
                      f"{[o.name for o in outputs]}; want ['input'] and ['logits']")
        return errors
    if inputs[0].shape != ["N"] + entry["input_shape"][1:]:
        errors.append(f"{name}: input shape {inputs[0].shape}")
    want_type = "tensor(uint8)" if dtype == "uint8" else "tensor(float)"
    if inputs[0].type != want_type:
        errors.append(f"{name}: input type {inputs[0].type}, want {want_type}")
    if outputs[0].shape != ["N"] + entry["output_shape"][1:]:
        errors.append(f"{name}: output shape {outputs[0].shape}")

    for rows in (x.shape[0], 1):
        (got,) = session.run(["logits"], {"input": x[:rows]})
        want = expected[:rows]
        if got.shape != want.shape:
            errors.append(f"{name}: batch {rows}: output shape {got.shape}, want {want.shape}")
            continue
        err = np.abs(got.astype(np.float64) - want) / np.maximum(np.abs(want), 1.0)
        worst = float(err.max())
        print(f"{name}: batch {rows}: output {list(got.shape)}, max relative error {worst:.2e}")
        if not worst <= RTOL:
            at = np.unravel_index(int(err.argmax()), err.shape)
            errors.append(f"{name}: batch {rows}: max relative error {worst:.3e} > {RTOL} at "
                          f"{at}: onnxruntime {got[at]}, engine {want[at]}")
    return errors


def main() -> int:
    directory = pathlib.Path(sys.argv[1])
    manifest = json.loads((directory / "manifest.json").read_text())
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}")
    errors = []
    for entry in manifest:
        errors += check(directory, entry)
    for e in errors:
        print("FAIL " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
