#!/usr/bin/env python3
"""The report of bench/engine/run_engine_zoo: reads the raw JSON lines of engine_zoo and
pytorch_zoo.py, writes one row per (model, precision, side) with its fraction of the machine's
peak and the CPU line, and prints the table of samples per second, the ratios and their
geometric mean, and the test accuracies.

    zoo_report.py RAW.jsonl [--out-dir DIR] [--note TEXT]

The machine's peak, for fp32 rows: the best of the engine's 2048 GEMM, PyTorch's, and the
theoretical FMA peak (threads x lanes x 2 x FMA units x the measured clock; machine_peak.h);
for bf16 rows: the best bf16 GEMM measured (the engine's bf16 backend's and PyTorch's, both on
oneDNN; the FMA peak of fp32 is no bound for AMX). "CPU-time ratio": PyTorch's CPU time per step (all its threads, the median
timing) over the engine's; with one thread it hardly depends on how busy the other cores are,
with more it counts the time each side's threads spin while they wait. The rows go to DIR/<date>-zoo-<cpu>-<threads>-threads.jsonl (default: beside RAW), appended.
"""
import argparse
import datetime
import json
import math
import os
import re
import sys


def cpu_slug(cpu_line):
    """'CPU Intel(R) Xeon(R) Processor: AVX-512, ...' -> 'intel-xeon-processor-avx-512'."""
    m = re.match(r"CPU (.*?): ([^,;]*)", cpu_line or "")
    if not m:
        return "unknown-cpu"
    words = re.sub(r"\((r|tm)\)", "", (m.group(1) + " " + m.group(2)).lower(), flags=re.I)
    return re.sub(r"[^a-z0-9]+", "-", words).strip("-") or "unknown-cpu"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("raw")
    p.add_argument("--out-dir", default=None)
    p.add_argument("--note", default="", help="how the machine was loaded, for the rows")
    a = p.parse_args()
    raw = [json.loads(l) for l in open(a.raw) if l.strip().startswith("{")]

    # The peaks were measured at the start of each round: the best of each.
    def best_of(rows, key):
        return max(rows, key=lambda r: r.get(key, 0), default=None)

    machine = best_of([r for r in raw if r.get("impl") == "machine"], "fma_peak_gflops")
    engine_head = best_of([r for r in raw if r.get("impl") == "engine" and "gemm_peak_gflops" in r],
                          "gemm_peak_gflops") or {}
    torch_rows = [r for r in raw if r.get("impl") == "pytorch" and "gemm_peak_gflops" in r]
    torch_head = dict(best_of(torch_rows, "gemm_peak_gflops") or {})
    if any("gemm_peak_bf16_gflops" in r for r in torch_rows):
        torch_head["gemm_peak_bf16_gflops"] = best_of(torch_rows, "gemm_peak_bf16_gflops")[
            "gemm_peak_bf16_gflops"]
    cpu = engine_head.get("cpu_kernels", "")
    peaks = {}
    if "gemm_peak_gflops" in engine_head:
        peaks["engine GEMM"] = engine_head["gemm_peak_gflops"]
    if "gemm_peak_gflops" in torch_head:
        peaks["PyTorch GEMM"] = torch_head["gemm_peak_gflops"]
    if machine:
        peaks[f'FMA peak ({machine["isa"]}, {machine["threads"]} threads x '
              f'{machine["fma_units"]} unit(s) at {machine["clock_ghz"]:.2f} GHz)'] = \
            machine["fma_peak_gflops"]
    peak_fp32 = max(peaks.values(), default=None)
    peaks_bf16 = {}
    engine_bf16 = [r["gemm_peak_bf16_gflops"] for r in raw
                   if r.get("impl") == "engine" and "gemm_peak_bf16_gflops" in r]
    if engine_bf16:
        peaks_bf16["engine bf16 GEMM"] = max(engine_bf16)
    if "gemm_peak_bf16_gflops" in torch_head:
        peaks_bf16["PyTorch bf16 GEMM"] = torch_head["gemm_peak_bf16_gflops"]
    peak_bf16 = max(peaks_bf16.values(), default=None)

    # Each side's best timing over the rounds (run_engine_zoo --rounds), with how many there were.
    best = {}
    for r in raw:
        if not r.get("model") or ("samples_per_s" not in r and "unsupported" not in r):
            continue
        key = (r["model"], r["precision"], r["impl"])
        seen = best.get(key)
        rounds = (seen or {}).get("rounds", 0) + 1
        if seen is None or r.get("samples_per_s", -1) > seen.get("samples_per_s", -1):
            seen = dict(r)
        seen["rounds"] = rounds
        best[key] = seen
    speed = list(best.values())
    acc = [r for r in raw if r.get("model") and "test_accuracy" in r]
    # The run's date: from run_engine_zoo's raw file name (zoo-raw-YYYYMMDD-...), else today.
    m = re.search(r"zoo-raw-(\d{4})(\d{2})(\d{2})-", os.path.basename(a.raw))
    date = f"{m.group(1)}-{m.group(2)}-{m.group(3)}" if m else datetime.date.today().isoformat()
    rows = []
    for r in speed:
        row = {**r, "date": date, "cpu": cpu}
        if a.note:
            row["note"] = a.note
        if r.get("impl") == "pytorch" and "torch" in torch_head:
            row["torch"] = torch_head["torch"]
        peak = peak_bf16 if r.get("precision") == "bf16" else peak_fp32
        if "gflops" in r and peak:
            row["peak_gflops"] = peak
            row["peak_fraction"] = round(r["gflops"] / peak, 4)
        rows.append(row)
    for r in acc:
        rows.append({**r, "date": date, "cpu": cpu})
    out_dir = a.out_dir or os.path.dirname(os.path.abspath(a.raw))
    os.makedirs(out_dir, exist_ok=True)
    threads = engine_head.get("threads") or next((r["threads"] for r in speed if "threads" in r), 0)
    out = os.path.join(out_dir, f"{date}-zoo-{cpu_slug(cpu)}-{threads}-threads.jsonl")
    with open(out, "a") as f:
        for header in (machine, engine_head, torch_head):
            if header:
                f.write(json.dumps({**header, "date": date}) + "\n")
        for row in rows:
            f.write(json.dumps(row) + "\n")

    print("\n" + cpu)
    print("peaks (GFLOP/s): " + "; ".join(f"{k} {v:.1f}" for k, v in {**peaks, **peaks_bf16}.items()))
    if torch_head:
        print(f'PyTorch {torch_head.get("torch", "?")}, {torch_head.get("threads", "?")} threads')
    if a.note:
        print(a.note)
    order = []
    for r in speed:
        if (r["model"], r["precision"]) not in order:
            order.append((r["model"], r["precision"]))
    by = {(r["model"], r["precision"], r["impl"]): r for r in rows if "model" in r
          and "test_accuracy" not in r}
    print("\n| model | data | batch | optimizer | precision | engine samples/s | PyTorch samples/s "
          "| ratio | CPU-time ratio | engine GFLOP/s (% of peak) | PyTorch GFLOP/s (% of peak) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios, cpu_ratios = {}, {}
    for model, prec in order:
        e, t = by.get((model, prec, "engine")), by.get((model, prec, "pytorch"))
        ref = next((x for x in (e, t) if x and "batch" in x), {})

        def sps(x):
            if x is None:
                return "-"
            if "unsupported" in x:
                return "unsupported"
            return f'{x["samples_per_s"]:,.0f}'

        def gf(x):
            if x is None or "gflops" not in x:
                return "-"
            frac = f' ({100 * x["peak_fraction"]:.0f}%)' if "peak_fraction" in x else ""
            return f'{x["gflops"]:.1f}{frac}'

        ratio, cpu_ratio = "-", "-"
        if e and t and "cpu_ms_per_step" in e and "cpu_ms_per_step" in t:
            cpu_ratio = f'{t["cpu_ms_per_step"] / e["cpu_ms_per_step"]:.2f}x'
            cpu_ratios.setdefault(prec, []).append(t["cpu_ms_per_step"] / e["cpu_ms_per_step"])
        if e and t and "samples_per_s" in e and "samples_per_s" in t:
            q = e["samples_per_s"] / t["samples_per_s"]
            ratios.setdefault(prec, []).append(q)
            ratio = f"{q:.2f}x"
            if e.get("params") != t.get("params"):
                ratio += f' (params differ: {e.get("params")} vs {t.get("params")})'
        print(f'| {model} | {ref.get("data", "-")} | {ref.get("batch", "-")} | '
              f'{ref.get("optimizer", "-")} | {prec} | {sps(e)} | {sps(t)} | {ratio} | {cpu_ratio} | {gf(e)} | '
              f'{gf(t)} |')
    for prec, qs in ratios.items():
        g = math.exp(sum(math.log(q) for q in qs) / len(qs))
        print(f"\n{prec}: geometric mean of the engine/PyTorch ratios over {len(qs)} models: "
              f"{g:.2f}x (min {min(qs):.2f}x, max {max(qs):.2f}x)")
        cq = cpu_ratios.get(prec, [])
        if cq:
            gc = math.exp(sum(math.log(q) for q in cq) / len(cq))
            print(f"{prec}: geometric mean of the CPU-time ratios (PyTorch's CPU ms per step over "
                  f"the engine's, median timing): {gc:.2f}x (min {min(cq):.2f}x, max {max(cq):.2f}x)")
    unsupported = {r["unsupported"] for r in speed if r.get("impl") == "engine" and "unsupported" in r}
    for msg in unsupported:
        print(f"engine unsupported: {msg}")

    if acc:
        print("\n| model | precision | epochs | train images | engine test acc | PyTorch test acc "
              "| engine train s | PyTorch train s |")
        print("|---|---|---|---|---|---|---|---|")
        keys = []
        for r in acc:
            if (r["model"], r["precision"]) not in keys:
                keys.append((r["model"], r["precision"]))
        ab = {(r["model"], r["precision"], r["impl"]): r for r in acc}
        for model, prec in keys:
            e, t = ab.get((model, prec, "engine"), {}), ab.get((model, prec, "pytorch"), {})
            ref = e or t
            print(f'| {model} | {prec} | {ref.get("epochs", "-")} | {ref.get("train_samples", "-")} | '
                  f'{e.get("test_accuracy", "-")} | {t.get("test_accuracy", "-")} | '
                  f'{e.get("train_seconds", "-")} | {t.get("train_seconds", "-")} |')
    print(f"\nrows: {out}")


if __name__ == "__main__":
    sys.exit(main())
