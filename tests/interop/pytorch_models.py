#!/usr/bin/env python3
"""PyTorch's half of pytorch_onnx_import_test.sh.

  pytorch_models.py export OUT_DIR
      Trains small PyTorch models for a few steps on seeded synthetic data (so that weights,
      biases and batch-norm statistics are not their initial values), exports each in eval mode
      with torch.onnx.export, once with each exporter this PyTorch has (the TorchScript one,
      dynamo=False, and the torch.export one, dynamo=True), and writes per model and exporter:
        NAME.EXPORTER.onnx       the file
        NAME.input.f32           a batch of inputs, float32 [B, sample...]
        NAME.expected.f32        PyTorch's eval-mode outputs for it, [B, classes]
      and manifest.json: [{"name", "exporter", "onnx", "batch", "classes", "layers"}, ...],
      "layers" the engine layer types the graph must be read as (batch norms folded into the
      convolution before them by an exporter that does so are checked by the test, not here).
      The MLP's training data is written too, as mlp_x.npy and mlp_y.npy (features standardized
      over all values, so that the engine's normalization leaves them as they are), with its
      cross-entropy on them in eval mode in manifest.json's "mlp_loss".
  pytorch_models.py compare OUT_DIR NAME ENGINE_OUTPUT.f32
      Checks the engine's outputs against PyTorch's: |engine - torch| <= 1e-5 * max(|torch|, 1)
      for every logit, and the same predicted class for every input.
"""
import json
import os
import sys
import warnings

import numpy as np

TOLERANCE = 1e-5


def models():
    import torch
    from torch import nn

    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh(),
                        nn.Linear(16, 3))
    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
    # Batch norm after a convolution (an exporter may fold it into the Conv), after a ReLU and
    # after a linear layer (which stay BatchNormalization nodes).
    cnn_bn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                           nn.BatchNorm2d(8, eps=1e-3), nn.MaxPool2d(2),
                           nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
                           nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 32),
                           nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 10))
    return [
        ("mlp", mlp, (12,), 3,
         ["linear", "relu", "linear", "tanh", "linear"]),
        ("cnn", cnn, (3, 16, 16), 10,
         ["conv2d", "relu", "max_pool2d", "conv2d", "relu", "max_pool2d", "flatten", "linear"]),
        ("cnn_bn", cnn_bn, (3, 16, 16), 10,
         ["conv2d", "batch_norm", "relu", "batch_norm", "max_pool2d", "conv2d", "batch_norm",
          "relu", "avg_pool2d", "flatten", "linear", "batch_norm", "relu", "linear"]),
    ]


def synthetic(n, sample, classes, seed):
    """Inputs standardized over all their values, labels from a fixed random projection."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n,) + sample)
    x = ((x - x.mean()) / x.std()).astype(np.float32)
    w = rng.normal(size=(int(np.prod(sample)), classes))
    y = (x.reshape(n, -1) @ w).argmax(axis=1).astype(np.int64)
    return x, y


def train(model, x, y, steps=60, batch=64):
    import torch

    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    g = torch.Generator().manual_seed(1)
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, len(xt), (batch,), generator=g)
        loss = torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


def export_all(out):
    import torch

    warnings.simplefilter("ignore")
    manifest = {"torch": torch.__version__, "models": []}
    for name, model, sample, classes, layers in models():
        x, y = synthetic(512, sample, classes, seed=len(name))
        train(model, x, y)
        if name == "mlp":
            np.save(os.path.join(out, "mlp_x.npy"), x)
            np.save(os.path.join(out, "mlp_y.npy"), y.astype(np.int32))
            with torch.no_grad():
                manifest["mlp_loss"] = float(torch.nn.functional.cross_entropy(
                    model(torch.from_numpy(x)).double(), torch.from_numpy(y)))
        rng = np.random.default_rng(100)
        batch = rng.normal(size=(9,) + sample).astype(np.float32)
        with torch.no_grad():
            expected = model(torch.from_numpy(batch)).numpy()
        batch.tofile(os.path.join(out, f"{name}.input.f32"))
        expected.astype(np.float32).tofile(os.path.join(out, f"{name}.expected.f32"))
        example = (torch.from_numpy(batch[:2]),)
        for exporter, dynamo in (("torchscript", False), ("dynamo", True)):
            path = os.path.join(out, f"{name}.{exporter}.onnx")
            try:
                if dynamo:
                    torch.onnx.export(model, example, path, input_names=["input"],
                                      output_names=["logits"], dynamo=True, verbose=False,
                                      dynamic_shapes=({0: torch.export.Dim("batch")},))
                else:
                    torch.onnx.export(model, example, path, input_names=["input"],
                                      output_names=["logits"], dynamo=False,
                                      dynamic_axes={"input": {0: "batch"},
                                                    "logits": {0: "batch"}})
            except Exception as e:  # an exporter this PyTorch lacks, or its dependencies
                print(f"{name}: the {exporter} exporter failed: {type(e).__name__}: "
                      f"{str(e).splitlines()[0] if str(e) else ''}")
                continue
            external = os.path.exists(path + ".data")
            print(f"{name}: the {exporter} exporter wrote {os.path.basename(path)}"
                  + (f" and its external data {os.path.basename(path)}.data" if external else ""))
            manifest["models"].append({"name": name, "exporter": exporter, "onnx": path,
                                       "batch": len(batch), "classes": classes,
                                       "layers": layers})
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"exported {len(manifest['models'])} files with torch {torch.__version__}")


def compare(out, name, engine_path):
    expected = np.fromfile(os.path.join(out, f"{name}.expected.f32"), dtype=np.float32)
    got = np.fromfile(engine_path, dtype=np.float32)
    if got.shape != expected.shape:
        sys.exit(f"{name}: the engine gave {got.size} values, PyTorch {expected.size}")
    bound = TOLERANCE * np.maximum(np.abs(expected), 1.0)
    err = np.abs(got - expected)
    worst = float((err / bound).max())
    classes = None
    for m in json.load(open(os.path.join(out, "manifest.json")))["models"]:
        if m["name"] == name:
            classes = m["classes"]
    same_class = (got.reshape(-1, classes).argmax(1) == expected.reshape(-1, classes).argmax(1))
    print(f"{name}: max |engine - torch| {err.max():.3g} ({worst:.3g} of the tolerance), "
          f"same class for {same_class.sum()}/{same_class.size} inputs")
    if worst > 1.0 or not same_class.all():
        sys.exit(f"{name}: the engine's outputs differ from PyTorch's")


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export_all(sys.argv[2])
    elif sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
