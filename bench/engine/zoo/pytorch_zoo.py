#!/usr/bin/env python3
"""PyTorch's side of bench/engine/run_engine_zoo.

Reads the same zoo file as engine_zoo.cc (models.json here: engine model specs and engine job
training sections), translates each model spec into torch.nn modules (layer for layer, the same
parameter count and FLOPs, He-uniform weights and zero biases as the engine initializes them), and
measures what engine_zoo measures, with the same options: training throughput (the batch indexed
out of the data set, forward, cross-entropy, backward, the optimizer's step) after --warmup steps,
in --repeats timings of --steps steps (0: as many as fill --seconds), best and median; and the
test accuracy after a model's "accuracy" recipe on Fashion-MNIST. bf16 is
torch.autocast("cpu", dtype=torch.bfloat16) around the forward pass and the loss (bf16 matmuls
and convolutions, float32 weights, gradients and optimizer). Prints one JSON line each.
"""
import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from engine_vs_pytorch import gemm_peak, read_idx  # noqa: E402  (the shared pieces)


# --- the model spec, translated -------------------------------------------------------------

class Residual(nn.Module):
    """body(x) + shortcut(x); an empty shortcut is the identity (training/layers/residual.h)."""

    def __init__(self, body, shortcut):
        super().__init__()
        self.body = body
        self.shortcut = shortcut

    def forward(self, x):
        return self.body(x) + (self.shortcut(x) if self.shortcut is not None else x)


ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


def build_layers(layers, shape, path):
    """(nn.Sequential, output shape, training FLOPs per sample) of a spec's layer list.

    FLOPs as engine_bench_common.cc's training_flops: 6 per multiply-add of linear and conv2d
    layers (projections included), nothing for the element-wise ones.
    """
    mods, flops = [], 0.0
    for i, l in enumerate(layers):
        t, where = l["type"], f"{path}[{i}]"
        if t == "flatten":
            mods.append(nn.Flatten())
            shape = [math.prod(shape)]
        elif t == "linear":
            mods.append(nn.Linear(shape[0], l["out"], bias=l.get("bias", True)))
            flops += 6.0 * shape[0] * l["out"]
            shape = [l["out"]]
        elif t == "conv2d":
            k, s, p = l["kernel"], l.get("stride", 1), l.get("padding", 0)
            mods.append(nn.Conv2d(shape[0], l["out"], k, stride=s, padding=p,
                                  bias=l.get("bias", True)))
            oh, ow = (shape[1] + 2 * p - k) // s + 1, (shape[2] + 2 * p - k) // s + 1
            flops += 6.0 * shape[0] * k * k * l["out"] * oh * ow
            shape = [l["out"], oh, ow]
        elif t in ("max_pool2d", "avg_pool2d"):
            k, p = l["kernel"], l.get("padding", 0)
            s = l.get("stride", k)
            pool = nn.MaxPool2d if t == "max_pool2d" else nn.AvgPool2d
            mods.append(pool(k, stride=s, padding=p))
            shape = [shape[0], (shape[1] + 2 * p - k) // s + 1, (shape[2] + 2 * p - k) // s + 1]
        elif t == "global_avg_pool":
            mods += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
            shape = [shape[0]]
        elif t == "batch_norm":
            bn = nn.BatchNorm2d if len(shape) == 3 else nn.BatchNorm1d
            mods.append(bn(shape[0], eps=l.get("eps", 1e-5), momentum=l.get("momentum", 0.1)))
        elif t == "layer_norm":
            mods.append(nn.LayerNorm(shape[-1], eps=l.get("eps", 1e-5)))
        elif t == "dropout":
            mods.append(nn.Dropout(l.get("p", 0.5)))
        elif t in ACTIVATIONS:
            mods.append(ACTIVATIONS[t]())
        elif t == "residual":
            body, out, f = build_layers(l["body"], shape, where + ".body")
            flops += f
            shortcut = None
            if "shortcut" in l:
                shortcut, _, f = build_layers(l["shortcut"], shape, where + ".shortcut")
                flops += f
            elif l.get("projection", False):
                # As the engine's model spec: a linear layer for flat input, else a 1x1 conv
                # whose stride is the ratio of the spatial sizes (both with a bias).
                if len(shape) == 1:
                    shortcut = nn.Linear(shape[0], out[0])
                    flops += 6.0 * shape[0] * out[0]
                else:
                    stride = shape[1] // out[1]
                    shortcut = nn.Conv2d(shape[0], out[0], 1, stride=stride)
                    flops += 6.0 * shape[0] * out[0] * out[1] * out[2]
            mods.append(Residual(body, shortcut))
            shape = out
        else:
            raise ValueError(f"{where}.type: pytorch_zoo.py does not translate {t!r}")
        act = l.get("activation", "none")
        if act != "none" and t in ("linear", "conv2d"):
            mods.append(ACTIVATIONS[act]())
    return nn.Sequential(*mods), shape, flops


def build_model(spec, seed=1):
    torch.manual_seed(seed)
    model, out, flops = build_layers(spec["layers"], list(spec["input"]), "layers")
    # The engine's initialization (training/init.cc): He uniform, bound sqrt(6 / fan_in), for
    # every weight; zero biases; norms' scales one and shifts zero (PyTorch's defaults).
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.kaiming_uniform_(m.weight, a=0.0, nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return model, out, flops


def make_optimizer(training, params):
    opt = training.get("optimizer", "adam")
    lr, wd = training.get("lr", 0.001), training.get("weight_decay", 0.0)
    if opt == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=training.get("momentum", 0.9),
                               weight_decay=wd)
    if opt == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    return torch.optim.Adam(params, lr=lr, weight_decay=wd)


# --- data -----------------------------------------------------------------------------------

def splitmix64(x):
    """engine_zoo.cc's splitmix64 on a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def synthetic_dataset(sample, n):
    """The same values and labels as engine_zoo.cc's synthetic_dataset."""
    numel = math.prod(sample) * n
    v = (splitmix64(np.arange(numel, dtype=np.uint64)) >> np.uint64(40)).astype(np.float32)
    x = v * np.float32(2.0 / 16777216.0) - np.float32(1.0)
    y = splitmix64(np.arange(n, dtype=np.uint64) + np.uint64(1 << 40)) % np.uint64(10)
    return (torch.from_numpy(x.reshape(n, *sample)),
            torch.from_numpy(y.astype(np.int64)))


def cpu_has_bf16():
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


# --- measurements ---------------------------------------------------------------------------

def bench_model(a, z, precision, fmnist, data, tag):
    name, training = z["name"], z["training"]
    head = {**tag, "model": name,
            "data": "synthetic-fashion-mnist" if a.synthetic and z["data"] == "fashion-mnist"
            else z["data"], "precision": precision, "threads": a.threads}
    if precision == "bf16" and not cpu_has_bf16():
        print(json.dumps({**head, "unsupported": "this CPU has neither AMX nor AVX512-BF16"}),
              flush=True)
        return
    batch = training.get("batch_size", 128)
    model, _, flops = build_model(z["model"])
    params = sum(p.numel() for p in model.parameters())
    opt = make_optimizer(training, model.parameters())
    loss_fn = nn.CrossEntropyLoss()

    def amp():
        if precision != "bf16":
            return contextlib.nullcontext()
        return torch.autocast("cpu", dtype=torch.bfloat16)

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        with amp():
            loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()

    x, y = data

    def batches(seed):  # shuffled each epoch, the last partial batch dropped (as engine_zoo)
        g = torch.Generator().manual_seed(seed)
        while True:
            perm = torch.randperm(len(x), generator=g)
            for i in range(0, len(x) - batch + 1, batch):
                idx = perm[i:i + batch]
                yield x[idx], y[idx]

    it = batches(7)
    model.train()
    for _ in range(a.warmup):
        step(*next(it))
    steps = a.steps
    if steps <= 0:
        t = time.perf_counter()
        for _ in range(3):
            step(*next(it))
        per_step = (time.perf_counter() - t) / 3
        steps = min(100000, max(3, math.ceil(a.seconds / per_step)))
    rates, cpu_ms = [], []
    for _ in range(a.repeats):
        t, c = time.perf_counter(), time.process_time()
        for _ in range(steps):
            step(*next(it))
        rates.append(steps * batch / (time.perf_counter() - t))
        cpu_ms.append(1e3 * (time.process_time() - c) / steps)
    best = max(rates)
    print(json.dumps({**head, "batch": batch, "optimizer": training.get("optimizer", "adam"),
                      "params": params, "flops_per_sample": flops, "steps": steps,
                      "repeats": a.repeats, "samples_per_s": round(best, 1),
                      "samples_per_s_median": round(statistics.median(rates), 1),
                      "gflops": round(best * flops / 1e9, 2),
                      "cpu_ms_per_step": round(statistics.median(cpu_ms), 3),
                      "loadavg": round(os.getloadavg()[0], 2)}), flush=True)

    epochs = z.get("accuracy", {}).get("epochs", 0)
    if a.accuracy_epochs >= 0 and epochs > 0:
        epochs = a.accuracy_epochs
    if epochs <= 0 or fmnist is None or z["data"] != "fashion-mnist":
        return
    (tx, ty), (vx, vy) = fmnist
    model, _, _ = build_model(z["model"])
    opt = make_optimizer(training, model.parameters())
    g = torch.Generator().manual_seed(1)
    t = time.perf_counter()
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(tx), generator=g)
        for i in range(0, len(tx), batch):
            idx = perm[i:i + batch]
            step(tx[idx], ty[idx])
    train_s = time.perf_counter() - t
    model.eval()
    with torch.no_grad(), amp():
        logits = torch.cat([model(vx[i:i + 1000]) for i in range(0, len(vx), 1000)]).float()
    acc = (logits.argmax(1) == vy).float().mean().item()
    loss = loss_fn(logits, vy).item()
    print(json.dumps({**head, "epochs": epochs, "train_samples": len(tx),
                      "test_accuracy": round(acc, 4), "test_loss": round(loss, 4),
                      "train_seconds": round(train_s, 1)}), flush=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--zoo", default=os.path.join(here, "models.json"))
    p.add_argument("--models", default="", help="comma-separated names; default: all")
    p.add_argument("--precisions", default="fp32")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--accuracy-epochs", type=int, default=-1)
    p.add_argument("--no-accuracy", action="store_true")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist/")
    p.add_argument("--synthetic", action="store_true")
    p.add_argument("--peaks", action="store_true", help="only the GEMM peaks")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--label", default="pytorch")
    a = p.parse_args()
    if a.quick:
        a.seconds, a.repeats, a.warmup = 0.3, 1, 2
        if a.accuracy_epochs < 0:
            a.accuracy_epochs = 1
    if a.no_accuracy:
        a.accuracy_epochs = 0
    a.repeats = max(1, a.repeats)
    if not a.data.endswith("/"):
        a.data += "/"
    torch.set_num_threads(a.threads)
    zoo = json.load(open(a.zoo))["models"]
    names = [n for n in a.models.split(",") if n]
    unknown = [n for n in names if n not in {z["name"] for z in zoo}]
    if unknown:
        sys.exit(f"pytorch_zoo.py: --models: no model {unknown[0]!r} in {a.zoo}")
    chosen = [z for z in zoo if not names or z["name"] in names]
    precisions = [q for q in a.precisions.split(",") if q]
    tag = {"impl": a.label, "torch": torch.__version__}
    if a.peaks:
        n = 512 if a.quick else 2048
        line = {**tag, "threads": a.threads, "gemm_peak_gflops": round(gemm_peak(n, torch.device("cpu")), 1)}
        if "bf16" in precisions and cpu_has_bf16():
            line["gemm_peak_bf16_gflops"] = round(
                gemm_peak(n, torch.device("cpu"), torch.bfloat16), 1)
        print(json.dumps(line), flush=True)
        return
    fmnist = None
    if not a.synthetic and any(z["data"] == "fashion-mnist" for z in chosen):
        x, y = read_idx(a.data + "train-images-idx3-ubyte.gz", a.data + "train-labels-idx1-ubyte.gz",
                        2048 if a.quick else None)
        tx, ty = read_idx(a.data + "t10k-images-idx3-ubyte.gz", a.data + "t10k-labels-idx1-ubyte.gz",
                          1024 if a.quick else None)
        mean, std = x.mean(), x.std()
        fmnist = ((x - mean) / std, y), ((tx - mean) / std, ty)
    for z in chosen:
        if fmnist is not None and z["data"] == "fashion-mnist":
            data = fmnist[0]
        else:
            data = synthetic_dataset(z["model"]["input"], 1024 if a.quick else 4096)
        for precision in precisions:
            bench_model(a, z, precision, fmnist, data, tag)


if __name__ == "__main__":
    main()
