#!/usr/bin/env python3
"""The engine on the user's own files beside PyTorch (bench/engine/run_data_vs_pytorch runs it).

Two benchmarks, two models each, each model the same layers, batch, optimizer (Adam, lr 1e-3),
epochs and thread count on both sides, measured from the files on disk to the final accuracy,
over several training seeds per side (the model's initialization and the data order; the splits
are fixed files):

- images: an image folder of PNG and JPEG files (Fashion-MNIST's first training images, tinted
  with a random color each and resized to 32x32 RGB by PIL, written once by `make-data`;
  train/ and val/, one sub-folder per class). Models: "cnn" (conv 32, max pool, conv 64, max
  pool, linear 128, linear 10, ReLU after each but the last) and "cnn-bn" (three conv + batch
  norm + ReLU + max pool stages of 32, 64 and 128 channels, linear 10). The engine: `tuner trial
  --engine-job` with "format": "image_folder" (decoded once, the decoded-image cache and
  prefetch as a user gets them: the cache cleared before a "cold" run; `--warm` adds a run kept
  from it). PyTorch: torchvision's ImageFolder (PIL decode, ToTensor, Normalize with the
  training images' per-channel statistics, computed when the files were written) and a
  DataLoader (shuffle, num_workers given, its default non-persistent workers), validation each
  epoch.
- table: a CSV of numeric and categorical columns (made by `make-data`, 4 classes). Models:
  "mlp" (128, 64, 4 with ReLU) and "mlp-bn-dropout" (256 and 256 with batch norm, ReLU and
  dropout 0.2, then 128 with ReLU, then 4). The engine: "format": "csv" (the cache cleared before
  each run, so it parses the file as PyTorch's side does; all of train.csv trained on, test.csv
  evaluated at the end with the best epoch's model by training loss). PyTorch: pandas.read_csv,
  one-hot categories of the training file, standardization with its statistics, a TensorDataset
  in a DataLoader (shuffle, num_workers 0), the test file evaluated at the end with the last
  epoch's model.

Each side initializes the weights its own way (the engine: He uniform, U(+-sqrt(6 / fan_in)),
biases 0; PyTorch: its defaults, U(+-1 / sqrt(fan_in)) for weights and biases), so the same seed
is not the same start: accuracies are compared over the seeds, not seed by seed.

PyTorch runs with OMP_WAIT_POLICY=PASSIVE unless the environment sets it: on a machine whose
cores are busy with other work, OpenMP's default spinning at its barriers made PyTorch's 2-thread
steps many times slower (the table's first epoch: 103 s instead of 9 s).

An epoch's time is wall time: the first one from the start of data loading (for the engine, the
start of the `tuner trial` process; for PyTorch, after `import torch`) to the end of the epoch, so
it holds the decoding or parsing; the later ones from epoch end to epoch end (the validation
pass included). For each seed the runs of the sides alternate (the order swapped from one seed to
the next); the tables give each side's median time over the seeds with PyTorch's time over the
engine's (> 1: the engine is faster), and every seed's accuracy with their median and range.

  data_vs_pytorch.py make-data DIR [--images N] [--rows N]
  data_vs_pytorch.py run DIR TUNER [--seeds S] [--first-seed F] [--threads T] [--workers W,...]
                         [--warm] [--models M,...] [--epochs-images E] [--epochs-table E]
                         [--only images|table]
  data_vs_pytorch.py torch-images DIR ... / torch-table DIR ...   (one PyTorch run; internal)
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time

BATCH_IMAGES = 64
BATCH_TABLE = 128
LR = 1e-3
CLASSES_TABLE = ["bronze", "gold", "platinum", "silver"]


# --- data ---------------------------------------------------------------------------------

def read_idx(images, labels, limit):
    with gzip.open(images, "rb") as f:
        _, n, h, w = struct.unpack(">IIII", f.read(16))
        n = min(n, limit)
        pixels = f.read(n * h * w)
    with gzip.open(labels, "rb") as f:
        f.read(8)
        y = f.read(n)
    return pixels, y, n, h, w


def make_images(dir_, count, fmnist):
    import numpy as np
    from PIL import Image

    pixels, labels, n, h, w = read_idx(os.path.join(fmnist, "train-images-idx3-ubyte.gz"),
                                       os.path.join(fmnist, "train-labels-idx1-ubyte.gz"), count)
    x = np.frombuffer(pixels, dtype=np.uint8).reshape(n, h, w)
    rng = np.random.default_rng(0)
    n_val = n // 7
    root = os.path.join(dir_, "images")
    shutil.rmtree(root, ignore_errors=True)
    sums = np.zeros(3)
    sq = np.zeros(3)
    seen = 0
    for i in range(n):
        split = "val" if i < n_val else "train"
        folder = os.path.join(root, split, f"class_{labels[i]}")
        os.makedirs(folder, exist_ok=True)
        tint = rng.uniform(0.5, 1.0, size=3)
        rgb = (x[i][:, :, None].astype(np.float32) * tint).round().astype(np.uint8)
        img = Image.fromarray(rgb, "RGB").resize((32, 32), Image.BILINEAR)
        path = os.path.join(folder, f"{i:05d}." + ("png" if i % 2 == 0 else "jpg"))
        if i % 2 == 0:
            img.save(path)
        else:
            img.save(path, quality=95)
        if split == "train":  # the statistics of the files as decoded
            a = np.asarray(Image.open(path).convert("RGB"), dtype=np.float64) / 255.0
            sums += a.reshape(-1, 3).sum(0)
            sq += (a.reshape(-1, 3) ** 2).sum(0)
            seen += a.shape[0] * a.shape[1]
    mean = sums / seen
    std = np.sqrt(sq / seen - mean ** 2)
    json.dump({"mean": mean.tolist(), "std": std.tolist(), "train": n - n_val, "val": n_val},
              open(os.path.join(root, "stats.json"), "w"))
    print(f"images: {n - n_val} training and {n_val} validation files under {root}")


def make_table(dir_, rows):
    import numpy as np

    rng = np.random.default_rng(1)
    n = rows + rows // 5
    num = rng.normal(size=(n, 8)) * np.array([1, 10, 100, 0.1, 5, 1, 2, 50]) + \
        np.array([0, 50, 1000, 1, -3, 0, 7, 200])
    region = rng.integers(0, 6, size=n)
    plan = rng.integers(0, 4, size=n)
    device = rng.integers(0, 3, size=n)
    z = (num - num.mean(0)) / num.std(0)
    score = (z[:, 0] + 0.8 * z[:, 1] * z[:, 2] - 0.6 * z[:, 3] + 0.5 * np.sin(2 * z[:, 4]) +
             0.7 * (region % 3 == 1) - 0.5 * (plan == 2) + 0.3 * device +
             0.5 * rng.normal(size=n))
    second = z[:, 5] - z[:, 6] + 0.6 * (region == 4) + 0.5 * rng.normal(size=n)
    label = (score > 0).astype(int) * 2 + (second > 0).astype(int)
    regions = ["north", "south", "east", "west", "centre", "islands"]
    plans = ["free", "basic", "pro", "team"]
    devices = ["ios", "android", "web"]
    root = os.path.join(dir_, "table")
    os.makedirs(root, exist_ok=True)
    header = [f"x{j}" for j in range(8)] + ["region", "plan", "device", "segment"]
    for name, lo, hi in (("train.csv", 0, rows), ("test.csv", rows, n)):
        with open(os.path.join(root, name), "w") as f:
            f.write(",".join(header) + "\n")
            for i in range(lo, hi):
                f.write(",".join(f"{v:.5g}" for v in num[i]) +
                        f",{regions[region[i]]},{plans[plan[i]]},{devices[device[i]]},"
                        f"{CLASSES_TABLE[label[i]]}\n")
    print(f"table: {rows} training and {n - rows} test rows under {root}")


# --- the models ---------------------------------------------------------------------------

MODELS = {"images": ["cnn", "cnn-bn"], "table": ["mlp", "mlp-bn-dropout"]}


def engine_layers(model, classes_out="classes"):
    """The engine's layers of a model of MODELS (torch_model builds the same)."""
    relu = {"type": "relu"}
    if model == "cnn":
        return [{"type": "conv2d", "out": 32, "kernel": 3, "padding": 1}, relu,
                {"type": "max_pool2d", "kernel": 2},
                {"type": "conv2d", "out": 64, "kernel": 3, "padding": 1}, relu,
                {"type": "max_pool2d", "kernel": 2},
                {"type": "flatten"},
                {"type": "linear", "out": 128}, relu,
                {"type": "linear", "out": classes_out}]
    if model == "cnn-bn":
        layers = []
        for c in (32, 64, 128):
            layers += [{"type": "conv2d", "out": c, "kernel": 3, "padding": 1, "bias": False},
                       {"type": "batch_norm"}, relu, {"type": "max_pool2d", "kernel": 2}]
        return layers + [{"type": "flatten"}, {"type": "linear", "out": classes_out}]
    if model == "mlp":
        return [{"type": "linear", "out": 128}, relu, {"type": "linear", "out": 64}, relu,
                {"type": "linear", "out": classes_out}]
    if model == "mlp-bn-dropout":
        layers = []
        for w in (256, 256):
            layers += [{"type": "linear", "out": w}, {"type": "batch_norm"}, relu,
                       {"type": "dropout", "p": 0.2}]
        return layers + [{"type": "linear", "out": 128}, relu,
                         {"type": "linear", "out": classes_out}]
    raise ValueError(f"unknown model {model}")


def torch_model(model, inputs, classes):
    from torch import nn

    if model == "cnn":
        return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(),
                             nn.Linear(128, classes))
    if model == "cnn-bn":
        layers, c_in = [], 3
        for c in (32, 64, 128):
            layers += [nn.Conv2d(c_in, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                       nn.MaxPool2d(2)]
            c_in = c
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(128 * 4 * 4, classes))
    if model == "mlp":
        return nn.Sequential(nn.Linear(inputs, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                             nn.Linear(64, classes))
    if model == "mlp-bn-dropout":
        return nn.Sequential(nn.Linear(inputs, 256), nn.BatchNorm1d(256), nn.ReLU(),
                             nn.Dropout(0.2), nn.Linear(256, 256), nn.BatchNorm1d(256), nn.ReLU(),
                             nn.Dropout(0.2), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, classes))
    raise ValueError(f"unknown model {model}")


# --- PyTorch --------------------------------------------------------------------------------

def torch_setup(threads, seed):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    return torch


def emit(**kv):
    print(json.dumps(kv), flush=True)


def torch_images(a):
    torch = torch_setup(a.threads, a.seed)
    t0 = time.perf_counter()  # data loading starts here
    from torch import nn
    from torchvision import datasets, transforms

    root = os.path.join(a.dir, "images")
    stats = json.load(open(os.path.join(root, "stats.json")))
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(stats["mean"], stats["std"])])
    train = datasets.ImageFolder(os.path.join(root, "train"), transform=tf)
    val = datasets.ImageFolder(os.path.join(root, "val"), transform=tf)
    loader = torch.utils.data.DataLoader(train, batch_size=BATCH_IMAGES, shuffle=True,
                                         num_workers=a.workers)
    val_loader = torch.utils.data.DataLoader(val, batch_size=256, num_workers=a.workers)
    model = torch_model(a.model, 3 * 32 * 32, len(train.classes))
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    ends = []
    acc = None
    for _ in range(a.epochs):
        model.train()
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += int((model(x).argmax(1) == y).sum())
        acc = correct / len(val)
        ends.append(time.perf_counter() - t0)
    emit(ends=ends, accuracy=acc)


def torch_table(a):
    torch = torch_setup(a.threads, a.seed)
    t0 = time.perf_counter()
    import numpy as np
    import pandas as pd
    from torch import nn

    root = os.path.join(a.dir, "table")
    train = pd.read_csv(os.path.join(root, "train.csv"))
    test = pd.read_csv(os.path.join(root, "test.csv"))
    label = "segment"
    cats = [c for c in train.columns
            if c != label and not pd.api.types.is_numeric_dtype(train[c])]
    nums = [c for c in train.columns if c != label and c not in cats]

    def encode(df):
        parts = [df[nums].to_numpy(np.float64)]
        for c in cats:  # one slot per category of the training file, sorted
            levels = sorted(train[c].unique())
            parts.append(pd.get_dummies(pd.Categorical(df[c], categories=levels))
                         .to_numpy(np.float64))
        return np.concatenate(parts, axis=1)

    xtr, xte = encode(train), encode(test)
    mean, std = xtr.mean(0), xtr.std(0)
    std[std == 0] = 1
    xtr = torch.tensor((xtr - mean) / std, dtype=torch.float32)
    xte = torch.tensor((xte - mean) / std, dtype=torch.float32)
    classes = sorted(train[label].unique())
    ytr = torch.tensor(pd.Categorical(train[label], categories=classes).codes, dtype=torch.long)
    yte = torch.tensor(pd.Categorical(test[label], categories=classes).codes, dtype=torch.long)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr),
                                         batch_size=BATCH_TABLE, shuffle=True, num_workers=0)
    model = torch_model(a.model, xtr.shape[1], len(classes))
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    ends = []
    for _ in range(a.epochs):
        model.train()
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        ends.append(time.perf_counter() - t0)
    model.eval()
    with torch.no_grad():
        acc = float((model(xte).argmax(1) == yte).float().mean())
    emit(ends=ends, accuracy=acc, features=int(xtr.shape[1]))


# --- the engine -----------------------------------------------------------------------------

def engine_job(kind, model, dir_, epochs, threads, seed):
    if kind == "images":
        spec = {"input": [3, 32, 32], "layers": engine_layers(model)}
        root = os.path.join(dir_, "images")
        data = {"format": "image_folder", "train": os.path.join(root, "train"),
                "validation": os.path.join(root, "val"), "size": [32, 32], "color": "rgb"}
        batch, objective = BATCH_IMAGES, "val_accuracy"
    else:
        spec = {"layers": engine_layers(model)}
        root = os.path.join(dir_, "table")
        data = {"format": "csv", "train": os.path.join(root, "train.csv"),
                "test": os.path.join(root, "test.csv"), "label": "segment",
                "validation_fraction": 0}
        batch, objective = BATCH_TABLE, "train_loss"
    return {"kind": "engine", "model": spec, "data": data,
            "training": {"epochs": epochs, "batch_size": batch, "optimizer": "adam", "lr": LR,
                         "seed": seed},
            "threads": threads, "objective_metric": objective}


def run_engine(tuner, job_path, kind, cache):
    env = dict(os.environ, TUNER_PARAMS="{}", TUNER_TRIAL_NUMBER="0", TUNER_DATA_CACHE_DIR=cache)
    t0 = time.perf_counter()
    p = subprocess.Popen([tuner, "trial", "--engine-job", job_path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    ends, last = [], None
    for line in p.stdout:
        if not line.startswith("{"):
            continue
        m = json.loads(line)
        if "best_epoch" in m:
            last = m
        elif "step" in m:
            ends.append(time.perf_counter() - t0)
            last = m
    err = p.stderr.read()
    if p.wait() != 0:
        sys.exit(f"tuner trial failed: {err}")
    acc = last.get("val_accuracy") if kind == "images" else last.get("test_accuracy")
    return {"ends": ends, "accuracy": acc, "total": time.perf_counter() - t0,
            "cache": " read from " in err}


def run_torch(script, kind, model, dir_, threads, epochs, workers, seed):
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, script, f"torch-{kind}", dir_, "--threads", str(threads),
                          "--epochs", str(epochs), "--workers", str(workers), "--model", model,
                          "--seed", str(seed)],
                         capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS=str(threads),
                                  OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE")))
    if out.returncode != 0:
        sys.exit(f"PyTorch {kind} failed: {out.stderr}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["total"] = time.perf_counter() - t0
    return r


def machine():
    model, flags, family, number = "unknown", set(), "?", "?"
    for line in open("/proc/cpuinfo"):
        key = line.split(":", 1)[0].strip()
        if key == "model name" and model == "unknown":
            model = line.split(":", 1)[1].strip()
        elif key == "cpu family" and family == "?":
            family = line.split(":", 1)[1].strip()
        elif key == "model" and number == "?":
            number = line.split(":", 1)[1].strip()
        elif key == "flags" and not flags:
            flags = set(line.split(":", 1)[1].split())
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if f in flags]
    return f"{model} (family {family} model {number})", isa, os.cpu_count()


def spread(values):
    """'median (min to max)' of accuracies."""
    return (f"{statistics.median(values):.4f} ({min(values):.4f} to {max(values):.4f})")


def run(a):
    import torch
    import torchvision

    script = os.path.abspath(__file__)
    kinds = [a.only] if a.only else ["images", "table"]
    chosen = a.models.split(",") if a.models else None
    epochs_of = {"images": a.epochs_images, "table": a.epochs_table}
    workers = [int(w) for w in a.workers.split(",")]
    seeds = list(range(a.first_seed, a.first_seed + a.seeds))
    cache = os.path.join(a.dir, "engine-cache")  # the engine's data cache
    loads = [os.getloadavg()[0]]
    print(f"load average at the start: {loads[0]:.2f}", flush=True)
    results = []  # (kind, model, impl, result)
    plan = [(k, m) for k in kinds for m in MODELS[k] if not chosen or m in chosen]
    for s in seeds:
        for kind, model in plan:
            epochs = epochs_of[kind]
            path = os.path.join(a.dir, f"engine-{kind}-{model}-seed{s}.json")
            json.dump(engine_job(kind, model, a.dir, epochs, a.threads, s), open(path, "w"),
                      indent=1)
            # A cold run parses or decodes the files as PyTorch's side does; a warm one maps the
            # cache the cold one wrote.
            sides = [("engine, cold cache", lambda: (shutil.rmtree(cache, ignore_errors=True),
                                                     run_engine(a.tuner, path, kind, cache))[1])]
            if a.warm:
                sides.append(("engine, warm cache", lambda: run_engine(a.tuner, path, kind, cache)))
            if kind == "images":
                for w in workers:
                    sides.append((f"PyTorch, num_workers={w}",
                                  lambda w=w: run_torch(script, kind, model, a.dir, a.threads,
                                                        epochs, w, s)))
            else:
                sides.append(("PyTorch + pandas",
                              lambda: run_torch(script, kind, model, a.dir, a.threads, epochs, 0,
                                                s)))
            if s % 2 == 1:  # the engine's runs (warm after cold) move behind PyTorch's
                engine = [x for x in sides if x[0].startswith("engine")]
                sides = [x for x in sides if not x[0].startswith("engine")] + engine
            for name, fn in sides:
                res = fn()
                res["seed"] = s
                res["load"] = os.getloadavg()[0]
                loads.append(res["load"])
                print(json.dumps({"bench": kind, "model": model, "impl": name, **res}),
                      flush=True)
                results.append((kind, model, name, res))
    cpu, isa, cores = machine()
    print(f"\nmachine: {cpu}; vector ISA: {', '.join(isa)}; {cores} cores; 1-minute load "
          f"average over the run: median {statistics.median(loads):.2f}, range "
          f"{min(loads):.2f} to {max(loads):.2f}; torch {torch.__version__}, torchvision "
          f"{torchvision.__version__}; {a.threads} threads each side; seeds "
          f"{', '.join(map(str, seeds))} (times: medians over the seeds)")
    for kind, model in plan:
        epochs = epochs_of[kind]
        names = list(dict.fromkeys(n for k, m, n, _ in results if k == kind and m == model))
        rows = {}
        for n in names:
            rs = [res for k, m, x, res in results if k == kind and m == model and x == n]
            first = statistics.median(res["ends"][0] for res in rs)
            later = statistics.median((res["ends"][-1] - res["ends"][0]) / (epochs - 1)
                                      for res in rs) if epochs > 1 else float("nan")
            last = statistics.median(res["ends"][-1] for res in rs)
            accs = [res["accuracy"] for res in sorted(rs, key=lambda r: r["seed"])]
            rows[n] = (first, later, last, accs)
        eng = [n for n in names if n.startswith("engine")]
        torch_names = [n for n in names if not n.startswith("engine")]
        best = min(torch_names, key=lambda n: rows[n][2])
        what = ("val accuracy" if kind == "images" else "test accuracy")
        print(f"\n{kind}, model {model}: {epochs} epochs; PyTorch time / engine time against the "
              f"fastest PyTorch ({best})")
        print(f"| side | epoch 1 incl. loading (s) | later epochs (s each) | {epochs} epochs (s) "
              f"| epoch 1 ratio | later ratio | total ratio | {what} per seed "
              f"| median (min to max) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for n in names:
            f, l, t, accs = rows[n]
            if n in eng:
                ratios = (f"{rows[best][0] / f:.2f}x | {rows[best][1] / l:.2f}x | "
                          f"{rows[best][2] / t:.2f}x")
            else:
                ratios = "- | - | -"
            print(f"| {n} | {f:.2f} | {l:.2f} | {t:.2f} | {ratios} | "
                  f"{', '.join(f'{x:.4f}' for x in accs)} | {spread(accs)} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-data")
    m.add_argument("dir")
    m.add_argument("--images", type=int, default=7000)
    m.add_argument("--rows", type=int, default=100000)
    m.add_argument("--fashion-mnist", default=os.environ.get("TUNER_FASHION_MNIST_DIR",
                                                             "/usr/share/datasets/fashion-mnist"))
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("tuner")
    r.add_argument("--seeds", "--rounds", type=int, default=3,
                   help="training seeds per side and model: F .. F+S-1")
    r.add_argument("--first-seed", type=int, default=0, help="F, the first seed (default 0)")
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--workers", default="2")
    r.add_argument("--warm", action="store_true",
                   help="add an engine run that maps the cache the cold run wrote")
    r.add_argument("--models", help="a comma-separated subset of " +
                   ", ".join(m for ms in MODELS.values() for m in ms))
    r.add_argument("--epochs-images", type=int, default=3)
    r.add_argument("--epochs-table", type=int, default=3)
    r.add_argument("--only", choices=["images", "table"])
    for name in ("torch-images", "torch-table"):
        t = sub.add_parser(name)
        t.add_argument("dir")
        t.add_argument("--threads", type=int, default=2)
        t.add_argument("--epochs", type=int, default=3)
        t.add_argument("--workers", type=int, default=0)
        t.add_argument("--model", default=MODELS[name.split("-")[1]][0])
        t.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.cmd == "make-data":
        os.makedirs(a.dir, exist_ok=True)
        make_images(a.dir, a.images, a.fashion_mnist)
        make_table(a.dir, a.rows)
    elif a.cmd == "run":
        run(a)
    elif a.cmd == "torch-images":
        torch_images(a)
    else:
        torch_table(a)


if __name__ == "__main__":
    main()
