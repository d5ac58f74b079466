#!/usr/bin/env python3
"""The function suite's tables: tuner against Optuna, problem by problem.

usage: report.py [--budgets 25,50,100,200] [--tuner default] [--all-samplers] [--wide]
                 [--versus SAMPLER] [--problems LIST]
                 RESULTS...

RESULTS are JSONL files, or folders of them, written by bench/suite/sampler_suite and
bench/optuna/sampler_suite.py (bench/suite/run_suite). Where a run appears more than once, the
record with the most trials counts.

Main table, per problem and budget k: the median regret over the seeds after k trials of
tuner's sampler under test (--tuner, default "default": what a new study uses), tuner's GP,
Optuna's default TPESampler, Optuna's GPSampler, each anchor that ran (bench/optuna/
anchor_suite.py: SMAC3, HEBO), and the reference: the best median among Optuna's samplers
(TPE variants and GP) and the anchors that ran on at least --min-seeds seeds (5). p: one-sided
Mann-Whitney U test that tuner's regrets are lower than the reference's (normal approximation with tie and continuity
corrections); "better" when p < 0.05, "worse" when the opposite one-sided test gives p < 0.05,
else "tie". Then the count per budget and the problems where tuner loses, and the ask times.
Distribution table, per problem and budget: for each sampler, the median and the 75th percentile
of the regret over the seeds and the fraction of seeds stuck (regret above the median of tuner's
random search at that budget, "-" without random runs); then the duplicate proposals (trials whose
parameters an earlier trial of the run had), summed over the runs of deterministic problems.
Time per ask in the regret runs: each sampler's wall time over the first k trials of a run divided
by k, median over the seeds (runs that share a machine: compare within one run only).
--versus SAMPLER: instead, tuner's sampler under test against another of tuner's samplers
(a before/after comparison: the same seeds, the same test), on the seeds both ran.
Standard library only.
"""

import argparse
import json
import math
import os
import statistics
import sys

OPTUNA_SAMPLERS = ("tpe", "tpe-uni", "tpe-group", "gp")
ANCHOR_NAMES = {"smac": "SMAC3", "hebo": "HEBO"}  # impl "anchor"


def label(impl, sampler):
    """A sampler's name in the tables: "tuner default", "Optuna gp", "SMAC3"."""
    if impl == "anchor":
        return ANCHOR_NAMES.get(sampler, sampler)
    return f"{'tuner' if impl == 'tuner' else 'Optuna'} {sampler}"


def ref_name(impl, sampler):
    """The reference's name in the comparison: Optuna's sampler bare ("tpe"), an anchor's
    label."""
    return label(impl, sampler) if impl == "anchor" else sampler


def read_records(paths):
    records = []
    for path in paths:
        files = ([os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".jsonl")]
                 if os.path.isdir(path) else [path])
        for name in files:
            with open(name) as f:
                for line in f:
                    if line.startswith("{"):
                        try:
                            records.append(json.loads(line))
                        except json.JSONDecodeError:
                            pass  # a line cut by a killed run
    return records


def mann_whitney_less(a, b):
    """One-sided p-value that a's values tend to be lower than b's (Mann-Whitney U, normal
    approximation, tie-corrected variance, continuity correction). 1.0 when undefined."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b], key=lambda t: t[0])
    n = n1 + n2
    rank_a = 0.0
    ties = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        rank = (i + j) / 2.0 + 1.0
        rank_a += rank * sum(1 for k in range(i, j + 1) if pooled[k][1] == 0)
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    u = rank_a - n1 * (n1 + 1) / 2.0
    var = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (u - n1 * n2 / 2.0 + 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def fmt(x):
    if x is None:
        return "-"
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:.3g}" if abs(x) < 1e5 else f"{x:.2e}"
    if abs(x) >= 0.01:
        return f"{x:.3g}"
    return f"{x:.2e}"


def fmt_p(p):
    return "-" if p is None else (f"{p:.3f}" if p >= 0.001 else f"{p:.0e}")


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


class Results:
    def __init__(self, records, min_seeds=5):
        self.min_seeds = min_seeds  # fewer seeds than this: no median shown, no comparison
        best = {}  # (impl, sampler, problem, seed) -> record with the most trials
        self.timing = []
        self.versions = set()
        for r in records:
            if r.get("bench") == "suite-timing":
                self.timing.append(r)
                continue
            if r.get("bench") != "suite":
                continue
            if r.get("version") and r.get("impl") in ("optuna", "anchor"):
                self.versions.add(f"{label(r['impl'], r['sampler']).split()[0]} {r['version']}")
            key = (r["impl"], r["sampler"], r["problem"], r["seed"])
            if key not in best or r["trials"] > best[key]["trials"]:
                best[key] = r
        self.cells = {}  # (impl, sampler, problem) -> k -> [regret]
        self.duplicates = {}  # (impl, sampler, problem) -> [duplicates of each run]
        self.seeds = {}  # (impl, sampler, problem) -> k -> seed -> regret
        self.ask_ms = {}  # (impl, sampler, problem) -> k -> [ms per ask over the first k trials]
        self.problems = []
        for (impl, sampler, problem, seed), r in best.items():
            if problem not in self.problems:
                self.problems.append(problem)
            if r.get("duplicates") is not None:
                self.duplicates.setdefault((impl, sampler, problem), []).append(r["duplicates"])
            for k, v in (r.get("seconds") or {}).items():
                if v is not None and int(k) > 0:
                    self.ask_ms.setdefault((impl, sampler, problem), {}).setdefault(
                        int(k), []).append(1000.0 * v / int(k))
            for k, v in r["regret"].items():
                if v is not None:
                    self.cells.setdefault((impl, sampler, problem), {}).setdefault(int(k),
                                                                                    []).append(v)
                    self.seeds.setdefault((impl, sampler, problem), {}).setdefault(
                        int(k), {})[seed] = v

    def values(self, impl, sampler, problem, k):
        return self.cells.get((impl, sampler, problem), {}).get(k)

    def by_seed(self, impl, sampler, problem, k):
        """seed -> regret after k trials."""
        return self.seeds.get((impl, sampler, problem), {}).get(k, {})

    def median(self, impl, sampler, problem, k):
        v = self.values(impl, sampler, problem, k)
        return statistics.median(v) if v and len(v) >= self.min_seeds else None

    def quantile(self, impl, sampler, problem, k, q):
        """The q-quantile of the regrets after k trials (linear interpolation), None with fewer
        than min_seeds seeds."""
        v = self.values(impl, sampler, problem, k)
        if not v or len(v) < self.min_seeds:
            return None
        v = sorted(v)
        at = q * (len(v) - 1)
        i = int(math.floor(at))
        return v[i] if i + 1 >= len(v) else v[i] + (at - i) * (v[i + 1] - v[i])

    def stuck(self, impl, sampler, problem, k):
        """The fraction of seeds whose regret after k trials is above random search's median
        there (tuner's random sampler); None without enough of either."""
        v = self.values(impl, sampler, problem, k)
        threshold = self.median("tuner", "random", problem, k)
        if not v or len(v) < self.min_seeds or threshold is None:
            return None
        return sum(1 for x in v if x > threshold) / len(v)

    def samplers(self, impl):
        return sorted({s for i, s, _ in self.cells if i == impl})


def compare(res, tuner_sampler, problem, k):
    """(reference sampler, its values, p_less, p_greater, verdict) or None without data."""
    ours = res.values("tuner", tuner_sampler, problem, k)
    if ours and len(ours) < res.min_seeds:
        ours = None
    candidates = [("optuna", s) for s in OPTUNA_SAMPLERS] + \
                 [("anchor", s) for s in res.samplers("anchor")]
    refs = [(statistics.median(v), ref_name(i, s), v) for i, s in candidates
            if (v := res.values(i, s, problem, k)) and len(v) >= res.min_seeds]
    if not ours or not refs:
        return None
    _, ref_sampler, ref = min(refs, key=lambda t: t[0])
    p_less = mann_whitney_less(ours, ref)
    p_greater = mann_whitney_less(ref, ours)
    verdict = "better" if p_less < 0.05 else "worse" if p_greater < 0.05 else "tie"
    return ref_sampler, ref, p_less, p_greater, verdict


def main_table(res, args, budgets, problems):
    t = args.tuner
    anchors = res.samplers("anchor")
    header = ["problem", "trials", "seeds", f"tuner {t}", "tuner gp", "Optuna tpe", "Optuna gp"]
    header += [label("anchor", a) for a in anchors]
    header += ["best reference", "p (tuner lower)", "verdict"]
    rows = []
    counts = {k: {"better": 0, "tie": 0, "worse": 0} for k in budgets}
    losses = {k: [] for k in budgets}
    for problem in problems:
        for k in budgets:
            c = compare(res, t, problem, k)
            if c is None:
                continue
            ref_sampler, ref, p_less, _, verdict = c
            ours = res.values("tuner", t, problem, k)
            counts[k][verdict] += 1
            if verdict == "worse":
                losses[k].append(problem)
            rows.append([problem, k, f"{len(ours)}/{len(ref)}", fmt(statistics.median(ours)),
                         fmt(res.median("tuner", "gp", problem, k)),
                         fmt(res.median("optuna", "tpe", problem, k)),
                         fmt(res.median("optuna", "gp", problem, k))] +
                        [fmt(res.median("anchor", a, problem, k)) for a in anchors] +
                        [f"{ref_sampler} {fmt(statistics.median(ref))}", fmt_p(p_less),
                         f"**{verdict}**" if verdict != "tie" else verdict])
    print(table(header, rows))
    print()
    version = ", ".join(sorted(res.versions)) or "Optuna ?"
    print(f"Median regret over the seeds (seeds: tuner/reference). {version}. "
          "best reference: the sampler with the lowest median at that budget among Optuna's and "
          "the anchors. p: one-sided "
          "Mann-Whitney U, tuner's regrets lower than the reference's; better: p < 0.05; worse: "
          "the opposite test p < 0.05; else tie.")
    print()
    print(f"Summary, tuner {t} against the best reference:")
    print()
    rows = []
    for k in budgets:
        n = sum(counts[k].values())
        if n == 0:
            continue
        rows.append([k, n, counts[k]["better"], counts[k]["tie"], counts[k]["worse"],
                     ", ".join(losses[k]) or "-"])
    print(table(["trials", "problems", "better (p < 0.05)", "not worse (tie)",
                 "worse (p < 0.05)", "problems where tuner is worse"], rows))


def versus_table(res, sampler, other, budgets, problems):
    """tuner `sampler` against tuner `other` on the seeds both ran, problem by problem."""
    header = ["problem", "trials", "seeds", f"tuner {other}", f"tuner {sampler}",
              f"p ({sampler} lower)", f"p ({sampler} higher)", "verdict"]
    rows = []
    counts = {k: {"better": 0, "tie": 0, "worse": 0} for k in budgets}
    changed = {k: {"better": [], "worse": []} for k in budgets}
    for problem in problems:
        for k in budgets:
            a = res.by_seed("tuner", sampler, problem, k)
            b = res.by_seed("tuner", other, problem, k)
            seeds = sorted(set(a) & set(b))
            if len(seeds) < res.min_seeds:
                continue
            ours, theirs = [a[s] for s in seeds], [b[s] for s in seeds]
            p_less, p_greater = mann_whitney_less(ours, theirs), mann_whitney_less(theirs, ours)
            verdict = "better" if p_less < 0.05 else "worse" if p_greater < 0.05 else "tie"
            counts[k][verdict] += 1
            if verdict != "tie":
                changed[k][verdict].append(problem)
            rows.append([problem, k, len(seeds), fmt(statistics.median(theirs)),
                         fmt(statistics.median(ours)), fmt_p(p_less), fmt_p(p_greater),
                         f"**{verdict}**" if verdict != "tie" else verdict])
    print(table(header, rows))
    print()
    print(f"Median regret over the seeds both ran. p: one-sided Mann-Whitney U; better: {sampler}'s "
          f"regrets lower than {other}'s at p < 0.05; worse: higher at p < 0.05; else tie.")
    print()
    rows = [[k, sum(counts[k].values()), counts[k]["better"], counts[k]["tie"], counts[k]["worse"],
             ", ".join(changed[k]["better"]) or "-", ", ".join(changed[k]["worse"]) or "-"]
            for k in budgets if sum(counts[k].values())]
    print(table(["trials", "problems", "better", "tie", "worse", "better on", "worse on"], rows))


def wide_table(res, tuner_sampler, budgets, problems):
    """One row a problem: for each budget, tuner's median, the best Optuna sampler's and p."""
    header = ["problem"]
    for k in budgets:
        header += [f"{k}: tuner {tuner_sampler}", f"{k}: best reference", f"{k}: p"]
    rows = []
    for problem in problems:
        row, any_cell = [problem], False
        for k in budgets:
            c = compare(res, tuner_sampler, problem, k)
            if c is None:
                row += ["-", "-", "-"]
                continue
            any_cell = True
            ref_sampler, ref, p_less, p_greater, verdict = c
            ours = fmt(statistics.median(res.values("tuner", tuner_sampler, problem, k)))
            mark = {"better": f"**{ours}**", "worse": f"*{ours}*"}.get(verdict, ours)
            p = fmt_p(p_less) if verdict != "worse" else f"{fmt_p(p_less)} (worse: {fmt_p(p_greater)})"
            row += [mark, f"{ref_sampler} {fmt(statistics.median(ref))}", p]
        if any_cell:
            rows.append(row)
    print(table(header, rows))
    print()
    print("Bold: tuner lower (p < 0.05, one-sided Mann-Whitney U); italic: tuner higher (the "
          "opposite test's p < 0.05, shown as 'worse'); else a tie.")


def distribution_table(res, cols, budgets, problems):
    """Per problem and budget, for each (impl, sampler) of `cols`: median, 75th percentile and
    fraction of seeds stuck; then the duplicate proposals of each."""
    cols = [c for c in cols if any(key[:2] == c for key in res.cells)]
    header = ["problem", "trials", "random median"]
    for impl, s in cols:
        name = label(impl, s)
        header += [f"{name} median", f"{name} p75", f"{name} stuck"]
    rows = []
    for problem in problems:
        for k in budgets:
            cells = []
            for impl, s in cols:
                stuck = res.stuck(impl, s, problem, k)
                cells += [fmt(res.median(impl, s, problem, k)),
                          fmt(res.quantile(impl, s, problem, k, 0.75)),
                          "-" if stuck is None else f"{stuck:.0%}"]
            if all(c == "-" for c in cells):
                continue
            rows.append([problem, k, fmt(res.median("tuner", "random", problem, k))] + cells)
    print(table(header, rows))
    print()
    print("Regret over the seeds: median, 75th percentile (p75) and the fraction of seeds stuck, "
          "whose regret is above the median of tuner's random search at that budget.")
    rows = []
    for impl, s in cols:
        runs = {p: d for (i, x, p), d in res.duplicates.items() if (i, x) == (impl, s)}
        if not runs:
            continue
        total = sum(sum(d) for d in runs.values())
        worst = sorted(((sum(d), p) for p, d in runs.items() if sum(d)), reverse=True)[:5]
        rows.append([label(impl, s), sum(len(d) for d in runs.values()), total,
                     ", ".join(f"{p} {n}" for n, p in worst) or "-"])
    if rows:
        print()
        print(table(["sampler", "runs", "duplicate proposals", "most on"], rows))
        print()
        print("Trials whose parameters an earlier trial of the same run had, over the runs of "
              "deterministic problems.")


def ask_time_table(res, budgets, problems):
    """Per problem and budget k, each sampler's median (over the seeds) of its run's wall time
    over the first k trials divided by k."""
    cols = [("tuner", s) for s in res.samplers("tuner")] + \
           [("optuna", s) for s in res.samplers("optuna")] + \
           [("anchor", s) for s in res.samplers("anchor")]
    cols = [c for c in cols if any(key[:2] == c for key in res.ask_ms)]
    if not cols:
        return
    rows = []
    for problem in problems:
        for k in budgets:
            cells = []
            for impl, s in cols:
                v = res.ask_ms.get((impl, s, problem), {}).get(k)
                cells.append(fmt(statistics.median(v)) if v and len(v) >= res.min_seeds else "-")
            if all(c == "-" for c in cells):
                continue
            rows.append([problem, k] + cells)
    print(table(["problem", "trials"] + [f"{label(i, s)} ms" for i, s in cols], rows))
    print()
    print("Time per ask in the regret runs: the run's wall time over its first k trials divided "
          "by k (milliseconds; the sampler's proposals, the objective and, for problems evaluated "
          "by another process, the exchange with it), median over the seeds. The runs share the "
          "machine with each other, so compare columns of the same run only.")


def all_samplers_table(res, budgets, problems):
    cols = [("tuner", s) for s in res.samplers("tuner")] + \
           [("optuna", s) for s in res.samplers("optuna")] + \
           [("anchor", s) for s in res.samplers("anchor")]
    header = ["problem", "trials"] + [label(i, s) for i, s in cols]
    rows = []
    for problem in problems:
        for k in budgets:
            meds = [res.median(i, s, problem, k) for i, s in cols]
            if all(m is None for m in meds):
                continue
            rows.append([problem, k] + [fmt(m) for m in meds])
    print(table(header, rows))


def timing_tables(res):
    if not res.timing:
        return
    cells = {}
    for r in res.timing:  # per cell, the record that timed the most asks
        key = (r["impl"], r["sampler"], r["problem"], r["n_trials"])
        if key not in cells or r.get("asks", 0) > cells[key].get("asks", 0):
            cells[key] = r
    keys = sorted({(s, p, n) for i, s, p, n in cells if i == "tuner"},
                  key=lambda t: (t[0], t[1], t[2]))
    rows = []
    def show(r):
        if r is None:
            return "-"
        if not r.get("asks"):
            return f"every ask failed ({r.get('failed', '?')}): {r.get('error', '?')}"
        failed = f", {r['failed']} failed" if r.get("failed") else ""
        ms = r["median_ms"]
        return f"{ms:,.0f} ({r['asks']}{failed})" if ms >= 1000 else f"{ms:.4g} ({r['asks']}{failed})"

    def show_ms(v):
        return "-" if v is None else (f"{v:,.0f}" if v >= 1000 else f"{v:.4g}")

    for s, p, n in keys:
        ours = cells[("tuner", s, p, n)]
        theirs = cells.get(("optuna", s, p, n))
        ratio = "-"
        if theirs and ours.get("asks") and theirs.get("asks"):
            r = theirs["median_ms"] / ours["median_ms"]
            ratio = f"{r:.0f}x" if r >= 10 else f"{r:.2g}x"
        rows.append([s, p, f"{n:,}", show(ours), show_ms(ours.get("mean_ms")),
                     show_ms(ours.get("first_ms")), show(theirs), ratio])
    print(table(["sampler", "problem", "finished trials", "tuner ms (asks)", "tuner mean ms",
                 "tuner first ms", "Optuna ms (asks)", "Optuna / tuner"], rows))
    print()
    print("Median wall time of one ask + suggestions + tell after that many finished (random) "
          "trials, one thread each; (asks timed). A failed ask (the sampler threw) is not timed. "
          "tuner mean: over the same asks; first: the ask before them, a fresh process's first "
          "(what the sampler keeps between asks is not there yet).")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--budgets", default="25,50,100,200")
    parser.add_argument("--tuner", default="default", help="tuner's sampler under test")
    parser.add_argument("--problems", default="", help="only these, comma-separated")
    parser.add_argument("--min-seeds", type=int, default=5,
                        help="cells with fewer seeds are left out (default 5)")
    parser.add_argument("--all-samplers", action="store_true",
                        help="also a table of every sampler's medians")
    parser.add_argument("--versus", default="",
                        help="compare --tuner with this tuner sampler instead of with Optuna")
    parser.add_argument("--wide", action="store_true",
                        help="the comparison as one row a problem (for the README)")
    args = parser.parse_args()
    res = Results(read_records(args.results), args.min_seeds)
    if not res.cells and not res.timing:
        raise SystemExit(f"report.py: no suite records in {' '.join(args.results)}")
    budgets = [int(x) for x in args.budgets.split(",") if x]
    problems = [p for p in args.problems.split(",") if p] or res.problems
    if res.cells and args.versus:
        print(f"### Function suite: tuner {args.tuner} against tuner {args.versus}\n")
        versus_table(res, args.tuner, args.versus, budgets, problems)
        print()
        print("### Distribution and seeds stuck\n")
        distribution_table(res, [("tuner", args.versus), ("tuner", args.tuner)], budgets, problems)
        print()
    elif res.cells and args.wide:
        print(f"### Function suite: tuner {args.tuner} against Optuna and the anchors\n")
        wide_table(res, args.tuner, budgets, problems)
        print()
    elif res.cells:
        print(f"### Function suite: tuner {args.tuner} against Optuna and the anchors\n")
        main_table(res, args, budgets, problems)
        print()
        print("### Distribution and seeds stuck\n")
        distribution_table(res, [("tuner", args.tuner), ("tuner", "gp"), ("optuna", "tpe"),
                                 ("optuna", "gp")] +
                           [("anchor", a) for a in res.samplers("anchor")], budgets, problems)
        print()
    if args.all_samplers and res.cells:
        print("### Every sampler's median regret\n")
        all_samplers_table(res, budgets, problems)
        print()
    if res.ask_ms:
        print("### Time per ask in the regret runs\n")
        ask_time_table(res, budgets, problems)
        print()
    if res.timing:
        print("### Time per ask\n")
        timing_tables(res)
        print()


if __name__ == "__main__":
    sys.exit(main())
