#!/usr/bin/env python3
"""The tables of a bench/mo run: report.py DIR [--markdown OUT].

Reads every *.jsonl in DIR (mo_bench.cc's and optuna_mo.py's records). For each problem and
budget k: the median hypervolume after k trials over the seeds both sides ran, of tuner's default
sampler and each of Optuna's (TPESampler, its default, and NSGAIISampler), their ratios, the
two-sided Mann-Whitney p (normal approximation, tie-corrected; bench/suite/report.py's test) and
how many problems are higher, tied or lower; then the two NSGA-IIs;
then tuner's other samplers' medians; then the time per ask, and non-dominated sorting's times.
Only seeds that both sides of a comparison ran are compared.
"""

import argparse
import collections
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "suite"))
from report import fmt, fmt_p, mann_whitney_less, table  # noqa: E402

PROBLEMS = ["zdt1", "zdt2", "zdt3", "dtlz2", "wfg4", "c2_dtlz2"]
HELD_OUT = ["zdt4", "zdt6", "dtlz4"]


def read(directory):
    records = []
    for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
        with open(path) as f:
            for line in f:
                if line.startswith("{"):
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass  # a line cut by a killed run
    return records


def two_sided(a, b):
    return min(1.0, 2.0 * min(mann_whitney_less(a, b), mann_whitney_less(b, a)))


def outcome(c):
    """'higher', 'lower' or 'tie' for a compare() result, at p < 0.05."""
    median_left, median_right, _, p, _ = c
    if p >= 0.05 or median_left == median_right:
        return "tie"
    return "higher" if median_left > median_right else "lower"


def compare(hv, problem, k, left, right):
    """(median left, median right, ratio, p, seeds) over the seeds both have."""
    a, b = hv[(problem, k) + left], hv[(problem, k) + right]
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return None
    x, y = [a[s] for s in seeds], [b[s] for s in seeds]
    ma, mb = statistics.median(x), statistics.median(y)
    return ma, mb, (ma / mb if mb else None), two_sided(x, y), len(seeds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("directory")
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args()
    records = read(args.directory)
    hv = collections.defaultdict(dict)  # (problem, k, impl, sampler) -> seed -> hv
    budgets = set()
    for r in records:
        if r.get("bench") != "mo":
            continue
        for k, v in r["hv"].items():
            hv[(r["problem"], int(k), r["impl"], r["sampler"])][r["seed"]] = v
            budgets.add(int(k))
    lines = []
    out = lines.append
    out("Median hypervolume of the feasible trials (higher is better), over the seeds both sides ran;")
    out("ratio = tuner / Optuna; p: two-sided Mann-Whitney.")
    out("")
    # The target: tuner's default against each of Optuna's samplers.
    verdicts = collections.defaultdict(collections.Counter)  # (Optuna sampler, k) -> outcome
    rows = []
    for p in PROBLEMS:
        for k in sorted(budgets):
            d = compare(hv, p, k, ("tuner", "default"), ("optuna", "tpe"))
            n = compare(hv, p, k, ("tuner", "default"), ("optuna", "nsga2"))
            if not d and not n:
                continue
            row = [p, str(k)]
            for name, c in (("TPE", d), ("NSGA-II", n)):
                if not c:
                    row += ["-"] * 4
                    continue
                row += [fmt(c[0]), fmt(c[1]), fmt(c[2]), fmt_p(c[3])]
                verdicts[(name, k)][outcome(c)] += 1
            row.append(str(min(c[4] for c in (d, n) if c)))
            rows.append(row)
    out(table(["problem", "trials", "tuner default", "Optuna TPE", "ratio", "p",
               "tuner default", "Optuna NSGA-II", "ratio", "p", "seeds"], rows))
    out("")
    for (name, k), counts in sorted(verdicts.items(), key=lambda item: (item[0][1], item[0][0])):
        out(f"- {k} trials, against Optuna's {name}: higher on {counts['higher']}, a tie on "
            f"{counts['tie']}, lower on {counts['lower']} (p < 0.05 two-sided)")
    out("")
    out("The two NSGA-IIs:")
    out("")
    rows = []
    for p in PROBLEMS:
        for k in sorted(budgets):
            g = compare(hv, p, k, ("tuner", "nsga2"), ("optuna", "nsga2"))
            if g:
                rows.append([p, str(k), fmt(g[0]), fmt(g[1]), fmt(g[2]), fmt_p(g[3]), str(g[4])])
    out(table(["problem", "trials", "tuner NSGA-II", "Optuna NSGA-II", "ratio", "p", "seeds"], rows))
    out("")
    if any(key[2:] == ("tuner", "gp") for key in hv):
        out("tuner's GP (expected hypervolume improvement) against tuner's default (multi-objective")
        out("TPE) and Optuna's TPE; ratio = GP / other:")
        out("")
        rows = []
        for p in HELD_OUT + PROBLEMS:
            for k in sorted(budgets):
                d = compare(hv, p, k, ("tuner", "gp"), ("tuner", "default"))
                o = compare(hv, p, k, ("tuner", "gp"), ("optuna", "tpe"))
                if not d and not o:
                    continue
                row = [p, str(k)]
                for c in (d, o):
                    row += ["-"] * 5 if not c else [fmt(c[0]), fmt(c[1]), fmt(c[2]), fmt_p(c[3]),
                                                    str(c[4])]
                rows.append(row)
        out(table(["problem", "trials", "tuner GP", "tuner default", "ratio", "p", "seeds",
                   "tuner GP", "Optuna TPE", "ratio", "p", "seeds"], rows))
        out("")
    others = sorted({key[3] for key in hv if key[2] == "tuner"} - {"default"})
    if others:
        out("tuner's samplers, median hypervolume over their seeds:")
        out("")
        rows = []
        for p in PROBLEMS:
            for k in sorted(budgets):
                cells = [hv.get((p, k, "tuner", s), {}) for s in ["default"] + others]
                if not any(cells):
                    continue
                rows.append([p, str(k)] + [fmt(statistics.median(c.values())) if c else "-"
                                           for c in cells])
        out(table(["problem", "trials", "default"] + others, rows))
        out("")
    timing = collections.defaultdict(list)  # (impl, sampler, problem, N) -> medians of rounds
    for r in records:
        if r.get("bench") == "mo-timing" and "median_ms" in r:
            timing[(r["impl"], r["sampler"], r["problem"], r["n_trials"])].append(r["median_ms"])
    if timing:
        out("Time per ask + tell after N finished trials (the median over rounds of each round's "
            "median):")
        out("")
        rows = [[impl, sampler, problem, str(n), str(len(ms)), fmt(statistics.median(ms))]
                for (impl, sampler, problem, n), ms in sorted(timing.items())]
        out(table(["impl", "sampler", "problem", "N", "rounds", "median ms"], rows))
        for (impl, sampler, problem, n), ms in sorted(timing.items()):
            peer = {"default": "tpe", "nsga2": "nsga2"}.get(sampler)
            if impl == "tuner" and peer and ("optuna", peer, problem, n) in timing:
                theirs = statistics.median(timing[("optuna", peer, problem, n)])
                out("")
                out(f"{problem} at {n} trials: Optuna's {peer} / tuner's {sampler} = "
                    f"{theirs / statistics.median(ms):.3g}x")
        out("")
    sorting = [r for r in records if r.get("bench") == "pareto-timing"]
    if sorting:
        out("search/pareto.h on random points (seconds):")
        out("")
        rows = [[str(r["points"]), str(r["objectives"]), r["shape"], str(r["fronts"]),
                 str(r["front_size"]), f"{r['ranks_s']:.3f}", f"{r['front_s']:.3f}"]
                for r in sorting]
        out(table(["points", "objectives", "shape", "fronts", "front size",
                   "non_domination_ranks", "pareto_front"], rows))
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
