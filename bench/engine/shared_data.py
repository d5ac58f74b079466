#!/usr/bin/env python3
"""Two engine trials of one executor on the same data set: how long each takes from its start to
its first training step, and the memory each holds (bench/engine/run_shared_data runs it).

Two data sets, written by `make-data` (Python's standard library only):
- images: an image folder of N PNG files (10 classes, 32x32 RGB, noisy colors; default 20,000);
- table: a CSV of R rows (default 100,000) of 8 numeric and 3 categorical columns, 4 classes.

Two schedules, each with a fresh cache folder ($TUNER_DATA_CACHE_DIR, as an executor's trials
share it):
- sequential: trial A runs to its end, then trial B starts (B is "the second trial");
- concurrent: A and B start at the same time (an executor with 2 slots).

Each trial is `tuner trial --engine-job` (as an executor runs it) with 1 thread, 1 epoch, no
validation. Measured per trial:
- start to first step: the time from the process's start to its first training step, taken as
  the time of its first epoch's metrics line less the epoch_seconds that line reports (the epoch
  runs from its first step; the line comes after the model's latency is measured, a few ms);
- peak memory, sampled every 10 ms from /proc/PID/smaps_rollup: RSS (every resident page,
  shared or not; what peak_rss_mb / ru_maxrss report), PSS (each shared page divided among the
  processes mapping it: what the trials cost the machine together is the sum of their PSS) and
  anonymous memory (the process's own heap; file pages mapped from the cache are not in it);
  and, when both run at once, the peak of their PSS summed at the same instant (what the two cost
  the machine together; a trial's own peak PSS rises once the other has exited).

Several binaries (TUNER=label:path, e.g. before:/tmp/tuner-before after:build/cli/tuner) run
interleaved, round by round, the order alternating; the table gives each one's median over the
rounds.

  shared_data.py make-data DIR [--images N] [--rows R]
  shared_data.py run DIR LABEL:TUNER [LABEL:TUNER ...] [--rounds R] [--only images|table]
"""
import argparse
import json
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

CLASSES_TABLE = ["bronze", "gold", "platinum", "silver"]


# --- data ---------------------------------------------------------------------------------------

def png_bytes(width, height, rgb_rows):
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + row for row in rgb_rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def make_images(root, count):
    rng = random.Random(0)
    shutil.rmtree(root, ignore_errors=True)
    side = 32
    for i in range(count):
        label = i % 10
        folder = os.path.join(root, f"class_{label}")
        os.makedirs(folder, exist_ok=True)
        # A class's color plus noise: each byte of random noise mapped through this image's table.
        base = [(label * 53 + 40 * c) % 160 for c in range(3)]
        tables = [bytes(min(255, base[c] + (b & 95)) for b in range(256)) for c in range(3)]
        noise = rng.randbytes(side * side * 3)
        pixels = bytearray(noise)
        for c in range(3):
            pixels[c::3] = noise[c::3].translate(tables[c])
        rows = [bytes(pixels[y * side * 3:(y + 1) * side * 3]) for y in range(side)]
        with open(os.path.join(folder, f"{i:06d}.png"), "wb") as f:
            f.write(png_bytes(side, side, rows))
    print(f"images: {count} PNG files under {root}")


def make_table(path, rows):
    rng = random.Random(1)
    regions = ["north", "south", "east", "west", "centre", "islands"]
    plans = ["free", "basic", "pro", "team"]
    devices = ["ios", "android", "web"]
    scales = [1, 10, 100, 0.1, 5, 1, 2, 50]
    offsets = [0, 50, 1000, 1, -3, 0, 7, 200]
    with open(path, "w") as f:
        f.write(",".join([f"x{j}" for j in range(8)] + ["region", "plan", "device", "segment"]) +
                "\n")
        for _ in range(rows):
            z = [rng.gauss(0, 1) for _ in range(8)]
            region, plan, device = rng.randrange(6), rng.randrange(4), rng.randrange(3)
            score = z[0] + 0.8 * z[1] * z[2] - 0.6 * z[3] + 0.7 * (region % 3 == 1) + 0.3 * device
            second = z[5] - z[6] + 0.6 * (region == 4) + 0.5 * rng.gauss(0, 1)
            label = (score > 0) * 2 + (second > 0)
            f.write(",".join(f"{z[j] * scales[j] + offsets[j]:.5g}" for j in range(8)) +
                    f",{regions[region]},{plans[plan]},{devices[device]},{CLASSES_TABLE[label]}\n")
    print(f"table: {rows} rows in {path}")


# --- one trial ----------------------------------------------------------------------------------

def job(kind, dir_):
    if kind == "images":
        data = {"format": "image_folder", "path": os.path.join(dir_, "images"), "size": [32, 32],
                "validation_fraction": 0}
        model = {"layers": [{"type": "conv2d", "out": 8, "kernel": 3, "padding": 1},
                            {"type": "relu"}, {"type": "max_pool2d", "kernel": 4},
                            {"type": "flatten"}, {"type": "linear", "out": "classes"}]}
        batch = 64
    else:
        data = {"format": "csv", "path": os.path.join(dir_, "table.csv"), "label": "segment",
                "validation_fraction": 0}
        model = {"layers": [{"type": "linear", "out": 64}, {"type": "relu"},
                            {"type": "linear", "out": "classes"}]}
        batch = 128
    return {"kind": "engine", "model": model, "data": data,
            "training": {"epochs": 1, "batch_size": batch, "optimizer": "adam", "lr": 1e-3,
                         "seed": 0},
            "threads": 1, "objective_metric": "train_loss"}


def memory(pid):
    """(rss, pss, anonymous) bytes of `pid`, from smaps_rollup; None when it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            text = f.read()
    except OSError:
        return None
    kb = {}
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith(":"):
            kb[parts[0][:-1]] = int(parts[1])
    return kb.get("Rss", 0) * 1024, kb.get("Pss", 0) * 1024, kb.get("Anonymous", 0) * 1024


class Trial:
    """One `tuner trial` process, its output read and its memory sampled on threads."""

    def __init__(self, tuner, job_path, cache):
        env = dict(os.environ, TUNER_PARAMS="{}", TUNER_TRIAL_NUMBER="0",
                   TUNER_DATA_CACHE_DIR=cache, OMP_NUM_THREADS="1")
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen([tuner, "trial", "--engine-job", job_path],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env, cwd=os.path.dirname(job_path))
        self.first_line = None
        self.epoch_seconds = None
        self.err = ""
        self.peak = [0, 0, 0]
        self.threads = [threading.Thread(target=f, daemon=True)
                        for f in (self._read_out, self._read_err, self._sample)]
        for t in self.threads:
            t.start()

    def _read_out(self):
        for line in self.p.stdout:
            if line.startswith("{") and self.first_line is None:
                m = json.loads(line)
                if "step" in m:
                    self.first_line = time.perf_counter() - self.t0
                    self.epoch_seconds = m["epoch_seconds"]

    def _read_err(self):
        self.err = self.p.stderr.read()

    def _sample(self):
        while self.p.poll() is None:
            m = memory(self.p.pid)
            if m:
                self.peak = [max(a, b) for a, b in zip(self.peak, m)]
            time.sleep(0.01)

    def wait(self):
        rc = self.p.wait()
        for t in self.threads:
            t.join()
        if rc != 0 or self.first_line is None:
            sys.exit(f"tuner trial failed ({rc}): {self.err}")
        return {"first_step": self.first_line - self.epoch_seconds,
                "rss": self.peak[0], "pss": self.peak[1], "anon": self.peak[2],
                "read": "read from" in self.err}


def run_pair(tuner, job_path, schedule):
    cache = tempfile.mkdtemp(prefix="tuner-shared-data-cache-")
    try:
        if schedule == "sequential":
            a = Trial(tuner, job_path, cache).wait()
            b = Trial(tuner, job_path, cache).wait()
        else:
            ta, tb = Trial(tuner, job_path, cache), Trial(tuner, job_path, cache)
            both = [0]  # the peak of their PSS summed at the same instant

            def sample_both():
                while ta.p.poll() is None or tb.p.poll() is None:
                    total = sum((memory(t.p.pid) or (0, 0, 0))[1] for t in (ta, tb))
                    both[0] = max(both[0], total)
                    time.sleep(0.01)
            sampler = threading.Thread(target=sample_both, daemon=True)
            sampler.start()
            a, b = ta.wait(), tb.wait()
            sampler.join()
            a["both_pss"] = b["both_pss"] = both[0]
            if a["read"] and not b["read"]:
                a, b = b, a  # A: the one that decoded or parsed
        return a, b
    finally:
        shutil.rmtree(cache, ignore_errors=True)


# --- the run ------------------------------------------------------------------------------------

def mib(b):
    return f"{b / 2**20:.0f}"


def run(a):
    tuners = []
    for spec in a.tuners:
        label, _, path = spec.partition(":")
        if not path or not os.access(path, os.X_OK):
            sys.exit(f"expected LABEL:TUNER with an executable TUNER, got {spec}")
        tuners.append((label, os.path.abspath(path)))
    kinds = [a.only] if a.only else ["images", "table"]
    work = tempfile.mkdtemp(prefix="tuner-shared-data-jobs-")
    jobs = {}
    for kind in kinds:
        jobs[kind] = os.path.join(work, f"{kind}.json")
        with open(jobs[kind], "w") as f:
            json.dump(job(kind, os.path.abspath(a.dir)), f)
    results = {}  # (kind, schedule, label) -> [(a, b)]
    for r in range(a.rounds):
        order = tuners if r % 2 == 0 else tuners[::-1]
        for kind in kinds:
            for schedule in ("sequential", "concurrent"):
                for label, tuner in order:
                    pair = run_pair(tuner, jobs[kind], schedule)
                    results.setdefault((kind, schedule, label), []).append(pair)
                    print(f"round {r + 1} {kind} {schedule} {label}: "
                          f"first step A {pair[0]['first_step']:.2f} s, B {pair[1]['first_step']:.2f} s;"
                          f" PSS A {mib(pair[0]['pss'])} MiB, B {mib(pair[1]['pss'])} MiB",
                          file=sys.stderr, flush=True)
    shutil.rmtree(work, ignore_errors=True)

    print(f"\nmedians over {a.rounds} rounds; A: the first trial (it decodes or parses), "
          "B: the second; memory: each trial's peak, MiB\n")
    print("| data | schedule | binary | A: start to first step (s) | B: start to first step (s) "
          "| A: RSS / PSS / anon | B: RSS / PSS / anon | A + B PSS at once | B read the cache |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in kinds:
        for schedule in ("sequential", "concurrent"):
            for label, _ in tuners:
                pairs = results[(kind, schedule, label)]
                med = lambda side, key: statistics.median(p[side][key] for p in pairs)
                mem = lambda side: " / ".join(mib(med(side, k)) for k in ("rss", "pss", "anon"))
                reads = sum(p[1]["read"] for p in pairs)
                print(f"| {kind} | {schedule} | {label} | {med(0, 'first_step'):.2f} | "
                      f"{med(1, 'first_step'):.2f} | {mem(0)} | {mem(1)} | "
                      f"{mib(statistics.median(p[0].get('both_pss', 0) for p in pairs)) if schedule == 'concurrent' else '-'} | "
                      f"{reads}/{len(pairs)} |")
    print()
    for label, _ in tuners[1:]:
        base = tuners[0][0]
        for kind in kinds:
            for schedule in ("sequential", "concurrent"):
                ratios = [x[1]["first_step"] / y[1]["first_step"] for x, y in
                          zip(results[(kind, schedule, base)], results[(kind, schedule, label)])]
                print(f"- {kind}, {schedule}: B's start to first step, {base} / {label}: "
                      f"{statistics.median(ratios):.1f}x (per round: "
                      f"{', '.join(f'{x:.1f}' for x in ratios)})")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-data")
    m.add_argument("dir")
    m.add_argument("--images", type=int, default=20000)
    m.add_argument("--rows", type=int, default=100000)
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("tuners", nargs="+", metavar="LABEL:TUNER")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--only", choices=["images", "table"])
    a = p.parse_args()
    if a.cmd == "make-data":
        os.makedirs(a.dir, exist_ok=True)
        make_images(os.path.join(a.dir, "images"), a.images)
        make_table(os.path.join(a.dir, "table.csv"), a.rows)
    else:
        run(a)


if __name__ == "__main__":
    main()
