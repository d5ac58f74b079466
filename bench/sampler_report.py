#!/usr/bin/env python3
"""Turns the JSON lines of the sampler benchmarks into side-by-side Markdown tables.

usage: sampler_report.py RESULTS_DIR

RESULTS_DIR holds what bench/run_sampler_benchmarks wrote: overhead-<impl>.jsonl and
quality-<impl>.jsonl, where <impl> is tuner, optuna5 (the latest Optuna from PyPI) or optuna31
(Debian's python3-optuna); any of them may be missing. Standard library only.
"""

import json
import math
import os
import statistics
import sys

IMPLS = ("tuner", "optuna5", "optuna31")
SAMPLER_ORDER = ("random", "tpe", "tpe-mv", "default")


def load(path):
    records = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    records.append(json.loads(line))
    return records


def quantile(values, q):
    """numpy's default (linear) quantile, as bench_common.h computes it."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def mann_whitney_p(a, b):
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2.0 + 1.0
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, (_, group) in zip(ranks, pooled) if group == 0)
    u = r1 - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    var = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2.0) - 0.5) / math.sqrt(var)
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))))


def fmt_ms(ms):
    if ms is None:
        return "n/a"
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


def fmt_num(x):
    if x is None:
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:.0f}"
    if abs(x) >= 0.01:
        return f"{x:.3g}"
    return f"{x:.2e}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def ordered(names):
    known = [s for s in SAMPLER_ORDER if s in names]
    return known + sorted(set(names) - set(known))


def version_of(records):
    versions = sorted({r.get("version") for r in records if r.get("version")})
    return "/".join(versions) if versions else None


def overhead_report(results):
    cells = {impl: {(r["sampler"], r["n_trials"]): r for r in recs}
             for impl, recs in results.items()}
    if not cells.get("tuner"):
        return "(no tuner overhead results)"
    peers = [impl for impl in ("optuna5", "optuna31") if cells.get(impl)]
    # Medians: on a shared machine one preemption among 30 timed cycles of 0.01 ms moves a mean
    # by 10x; the JSON lines keep the means too.
    header = ["sampler", "finished trials", "tuner ms"]
    for impl in peers:
        v = version_of(results[impl])
        header += [f"Optuna {v} ms (asks)", f"speedup vs {v}"]
    rows = []
    sampler_rank = ordered([s for s, _ in cells["tuner"]])
    keys = sorted(cells["tuner"], key=lambda k: (sampler_rank.index(k[0]), k[1]))
    for key in keys:
        t = cells["tuner"][key]
        row = [key[0], f"{key[1]:,}", fmt_ms(t["median_ms"])]
        for impl in peers:
            o = cells[impl].get(key)
            if o is None:
                row += ["n/a", "n/a"]
            else:
                row += [f"{fmt_ms(o['median_ms'])} ({o['asks']})",
                        f"{o['median_ms'] / t['median_ms']:.0f}x"]
        rows.append(row)
    text = [table(header, rows)]
    text.append("")
    asks = sorted({c["asks"] for c in cells["tuner"].values()})
    asks = str(asks[0]) if len(asks) == 1 else f"{asks[0]}-{asks[-1]}"
    text.append("Median wall time of one define-by-run ask + 10 suggestions + tell, after "
                "pre-filling the study with that many finished trials; tuner timed "
                f"{asks} cycles per cell, Optuna the number in parentheses. "
                "Speedup = Optuna time / tuner time.")
    # Growth of tuner's cost with the number of trials.
    growth = []
    for sampler in ordered({s for s, _ in cells["tuner"]}):
        sizes = sorted(n for s, n in cells["tuner"] if s == sampler)
        if len(sizes) >= 2 and sizes[0] > 0:
            a, b = cells["tuner"][(sampler, sizes[0])], cells["tuner"][(sampler, sizes[-1])]
            growth.append(f"{sampler}: x{b['median_ms'] / a['median_ms']:.1f} from {sizes[0]:,} to "
                          f"{sizes[-1]:,} trials (x{sizes[-1] / sizes[0]:.0f} more trials)")
    if growth:
        text.append("")
        text.append("tuner cost growth: " + "; ".join(growth) + ".")
    return "\n".join(text)


def quality_report(results):
    # impl -> (function, sampler) -> checkpoint -> [regret]
    data = {}
    for impl, recs in results.items():
        for r in recs:
            for k, v in r["regret"].items():
                if v is not None:
                    data.setdefault(impl, {}).setdefault((r["function"], r["sampler"]), {}) \
                        .setdefault(int(k), []).append(v)
    if not data.get("tuner"):
        return "(no tuner quality results)"
    peers = [impl for impl in ("optuna5", "optuna31") if data.get(impl)]

    def cell(impl, key, k):
        values = data.get(impl, {}).get(key, {}).get(k)
        if not values:
            return None
        return (statistics.median(values), quantile(values, 0.25), quantile(values, 0.75),
                len(values), values)

    def show(c):
        if c is None:
            return "n/a"
        return f"{fmt_num(c[0])} [{fmt_num(c[1])}, {fmt_num(c[2])}]"

    def better(a, b):
        if a is None or b is None:
            return "n/a"
        p = mann_whitney_p(a[4], b[4])
        if p >= 0.05:
            return f"tie (p={p:.2f})"
        return f"**tuner** (p={p:.3f})" if a[0] < b[0] else f"optuna (p={p:.3f})"

    header = ["function", "sampler", "trials", "seeds", "tuner median [IQR]"]
    for impl in peers:
        v = version_of(results[impl])
        header += [f"Optuna {v} median [IQR]", "better"]
    rows = []
    functions = []
    for f, _ in data["tuner"]:
        if f not in functions:
            functions.append(f)
    for f in functions:
        samplers = ordered([s for g, s in data["tuner"] if g == f])
        for s in samplers:
            for k in sorted(data["tuner"][(f, s)]):
                t = cell("tuner", (f, s), k)
                row = [f, s, k, t[3], show(t)]
                for impl in peers:
                    o = cell(impl, (f, s), k)
                    row += [show(o), better(t, o)]
                rows.append(row)
    text = [table(header, rows), ""]
    text.append("Regret = best value among the first `trials` trials minus the known optimum; "
                "median over the seeds, [25th, 75th percentile]. \"better\": the side with the lower "
                "median when a two-sided Mann-Whitney U test over the seeds gives p < 0.05, "
                "else tie.")

    # The target: after the last checkpoint, tuner's TPE no worse than the better of
    # Optuna's univariate and multivariate TPE on every function.
    for impl in peers:
        v = version_of(results[impl])
        lines = []
        for f in functions:
            last = max(k for (g, _), ks in data["tuner"].items() if g == f for k in ks)
            ref = [(cell(impl, (f, s), last), s) for s in ("tpe", "tpe-mv")]
            ref = [(c, s) for c, s in ref if c is not None]
            if not ref:
                continue
            best_cell, best_sampler = min(ref, key=lambda r: r[0][0])
            best = best_cell[0]
            ours = []
            for s in ("tpe", "tpe-mv", "default"):
                c = cell("tuner", (f, s), last)
                if c is None:
                    continue
                p = mann_whitney_p(c[4], best_cell[4])
                if c[0] <= best:
                    mark = "ok" if p >= 0.05 else f"better, p={p:.3f}"
                else:
                    mark = f"worse, n.s. p={p:.2f}" if p >= 0.05 else f"WORSE, p={p:.3f}"
                ours.append(f"{s} {fmt_num(c[0])} ({mark})")
            lines.append(f"- {f} @{last}: best Optuna {v} TPE = {fmt_num(best)} ({best_sampler}); "
                         f"tuner " + ", ".join(ours))
        if lines:
            text.append("")
            text.append(f"Target (tuner TPE median regret no worse than the better of Optuna {v}'s "
                        "univariate and multivariate TPE):")
            text += lines
    return "\n".join(text)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    directory = sys.argv[1]
    overhead = {impl: load(os.path.join(directory, f"overhead-{impl}.jsonl")) for impl in IMPLS}
    quality = {impl: load(os.path.join(directory, f"quality-{impl}.jsonl")) for impl in IMPLS}
    if any(overhead.values()):
        print("### sampler_overhead: time per ask+tell (10-D mixed space)\n")
        print(overhead_report({k: v for k, v in overhead.items() if v}))
        print()
    if any(quality.values()):
        print("### sampler_quality: regret (Branin 2-D, Rosenbrock 10-D, Ackley 10-D)\n")
        print(quality_report({k: v for k, v in quality.items() if v}))
        print()


if __name__ == "__main__":
    main()
