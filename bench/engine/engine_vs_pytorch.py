#!/usr/bin/env python3
"""PyTorch's side of bench/engine/run_engine_vs_pytorch.

The same models, recipe and measurements as engine_vs_pytorch.cc: training throughput (forward +
backward + Adam step, batch 128) with N threads, test accuracy after the recipe's epochs, and the
peak of a 2048 float32 GEMM. Prints one JSON line per measurement, tagged with --label.

With --device cuda it is the GPU anchor of bench/gpu/check.sh: the data set sits on the GPU and
the steps are timed between two synchronizations, with no per-step synchronization (PyTorch's
eager mode at its best; the engine waits for each step's loss).

With --autocast-bf16 the forward passes and losses run under torch.autocast(dtype=torch.bfloat16)
(bf16 matmuls and convolutions, float32 weights and optimizer), the peer of the engine's
--backend cuda-bf16; the GEMM peak is then that of bf16 inputs.
"""
import contextlib
import argparse
import gzip
import json
import struct
import time

import numpy as np
import torch
from torch import nn

BATCH = 128


def read_idx(images, labels, limit=None):
    with gzip.open(images, "rb") as f:
        magic, n, h, w = struct.unpack(">IIII", f.read(16))
        assert magic == 0x803, images
        n = n if limit is None else min(n, limit)
        x = np.frombuffer(f.read(n * h * w), dtype=np.uint8).reshape(n, 1, h, w)
    with gzip.open(labels, "rb") as f:
        magic, m = struct.unpack(">II", f.read(8))
        assert magic == 0x801, labels
        y = np.frombuffer(f.read(n), dtype=np.uint8)
    return torch.tensor(x, dtype=torch.float32) / 255.0, torch.tensor(y, dtype=torch.long)


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256),
                         nn.ReLU(), nn.Linear(256, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


FLOPS = {  # training FLOPs per sample, counted as engine_vs_pytorch.cc does
    "mlp": 6.0 * (784 * 512 + 512 * 256 + 256 * 10),
    "cnn": 6.0 * (1 * 9 * 32 * 28 * 28 + 32 * 9 * 64 * 14 * 14 + 3136 * 128 + 128 * 10),
}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def gemm_peak(n, device, dtype=torch.float32):
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    sync(device)
    reps = 20 if device.type == "cuda" else 1
    best = 0.0
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            a @ b
        sync(device)
        best = max(best, reps * 2.0 * n ** 3 / (time.perf_counter() - t) / 1e9)
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--epochs-mlp", type=int, default=5)
    p.add_argument("--epochs-cnn", type=int, default=3)
    p.add_argument("--models", default="mlp,cnn")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist/")
    p.add_argument("--label", default="pytorch")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--autocast-bf16", action="store_true",
                   help="forward and loss under torch.autocast(dtype=torch.bfloat16)")
    a = p.parse_args()
    dev = torch.device(a.device)

    def amp():
        if not a.autocast_bf16:
            return contextlib.nullcontext()
        return torch.autocast(device_type=dev.type, dtype=torch.bfloat16)

    if a.quick:
        a.steps, a.epochs_mlp, a.epochs_cnn = 20, 1, 1
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    x, y = read_idx(a.data + "train-images-idx3-ubyte.gz", a.data + "train-labels-idx1-ubyte.gz",
                    2048 if a.quick else None)
    tx, ty = read_idx(a.data + "t10k-images-idx3-ubyte.gz", a.data + "t10k-labels-idx1-ubyte.gz",
                      1024 if a.quick else None)
    mean, std = x.mean(), x.std()
    x, tx = (x - mean) / std, (tx - mean) / std
    x, y, tx, ty = x.to(dev), y.to(dev), tx.to(dev), ty.to(dev)
    tag = {"impl": a.label, "torch": torch.__version__, "device": a.device, "threads": a.threads}
    if a.autocast_bf16:
        tag["autocast"] = "bf16"
    peak = gemm_peak(512 if a.quick else (8192 if dev.type == "cuda" else 2048), dev,
                     torch.bfloat16 if a.autocast_bf16 else torch.float32)
    print(json.dumps({**tag, "gemm_peak_gflops": round(peak, 1)}), flush=True)
    for name in a.models.split(","):
        make = {"mlp": mlp, "cnn": cnn}[name]
        model = make().to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()

        def batches(seed):
            g = torch.Generator().manual_seed(seed)
            while True:
                perm = torch.randperm(len(x), generator=g).to(dev)
                for i in range(0, len(x) - BATCH + 1, BATCH):
                    idx = perm[i:i + BATCH]
                    yield x[idx], y[idx]

        it = batches(7)

        def step(xb, yb):
            opt.zero_grad(set_to_none=True)
            with amp():
                loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()

        for _ in range(10):
            step(*next(it))
        sync(dev)
        t = time.perf_counter()
        for _ in range(a.steps):
            step(*next(it))
        sync(dev)
        sps = a.steps * BATCH / (time.perf_counter() - t)
        print(json.dumps({**tag, "model": name, "batch": BATCH, "samples_per_s": round(sps, 1),
                          "gflops": round(sps * FLOPS[name] / 1e9, 2),
                          "peak_fraction": round(sps * FLOPS[name] / 1e9 / peak, 4)}),
              flush=True)

        epochs = a.epochs_mlp if name == "mlp" else a.epochs_cnn
        if epochs <= 0:
            continue
        torch.manual_seed(1)
        model = make().to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        g = torch.Generator().manual_seed(1)
        t = time.perf_counter()
        for _ in range(epochs):
            perm = torch.randperm(len(x), generator=g).to(dev)
            for i in range(0, len(x), BATCH):
                idx = perm[i:i + BATCH]
                step(x[idx], y[idx])
        sync(dev)
        train_s = time.perf_counter() - t
        model.eval()
        with torch.no_grad(), amp():
            logits = torch.cat([model(tx[i:i + 1000]) for i in range(0, len(tx), 1000)]).float()
            acc = (logits.argmax(1) == ty).float().mean().item()
            loss = loss_fn(logits, ty).item()
        print(json.dumps({**tag, "model": name, "epochs": epochs, "test_accuracy": round(acc, 4),
                          "test_loss": round(loss, 4), "train_seconds": round(train_s, 1)}),
              flush=True)


if __name__ == "__main__":
    main()
