#!/usr/bin/env python3
"""Tests of bench/suite/report.py: the Mann-Whitney p-values, the verdicts, the anchors' columns.

The p-values are checked against scipy.stats.mannwhitneyu(alternative="less",
method="asymptotic") when scipy is importable, and always against the values it gave for the
same samples (scipy 1.17.1). Standard library only otherwise.
"""

import io
import json
import os
import random
import sys
import tempfile
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


def samples():
    rng = random.Random(1)
    cases = [([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]), ([1, 1, 2, 2, 3], [2, 3, 3, 4, 4]),
             ([0] * 5 + [1] * 5, [0] * 3 + [1] * 7)]
    for _ in range(2):
        cases.append(([rng.choice([0, 0.5, 1, 1.5, 2, 3]) for _ in range(20)],
                      [rng.gauss(1, 1) for _ in range(20)]))
    return cases


# scipy 1.17.1's p-values for samples(), in order.
SCIPY = [0.006092890177672406, 0.02620581433551434, 0.1989804177178532, 0.7643767074264556,
         0.9622674262064487]


def test_p_values():
    for (a, b), expected in zip(samples(), SCIPY):
        p = report.mann_whitney_less(a, b)
        check(abs(p - expected) < 1e-9, f"p({a}, {b}) = {p}, scipy gave {expected}")
    check(report.mann_whitney_less([5, 5, 5], [5, 5, 5]) == 1.0, "all ties must give p = 1")
    try:
        from scipy.stats import mannwhitneyu
    except ImportError:
        return
    rng = random.Random(2)
    for _ in range(50):
        a = [round(rng.gauss(0, 1), 1) for _ in range(rng.randint(3, 25))]
        b = [round(rng.gauss(0.5, 1), 1) for _ in range(rng.randint(3, 25))]
        expected = mannwhitneyu(a, b, alternative="less", method="asymptotic").pvalue
        p = report.mann_whitney_less(a, b)
        check(abs(p - expected) < 1e-9, f"p = {p}, scipy {expected} for {a} {b}")


def record(impl, sampler, problem, seed, trials, regret):
    return {"bench": "suite", "impl": impl, "sampler": sampler, "problem": problem,
            "seed": seed, "trials": trials, "regret": {str(trials): regret}}


def test_verdicts():
    recs = []
    for seed in range(20):
        # "easy": tuner far lower; "hard": tuner far higher; "same": equal distributions.
        recs.append(record("tuner", "default", "easy", seed, 50, 0.01 * (seed + 1)))
        recs.append(record("optuna", "tpe", "easy", seed, 50, 1.0 + seed))
        recs.append(record("optuna", "gp", "easy", seed, 50, 2.0 + seed))
        recs.append(record("tuner", "default", "hard", seed, 50, 5.0 + seed))
        recs.append(record("optuna", "tpe", "hard", seed, 50, 9.0 + seed))
        recs.append(record("optuna", "gp", "hard", seed, 50, 0.1 * (seed + 1)))
        recs.append(record("tuner", "default", "same", seed, 50, float(seed)))
        recs.append(record("optuna", "tpe", "same", seed, 50, float(seed) + 0.5))
        # A shorter run of the same seed is superseded by the longer one.
        recs.append(record("optuna", "gp", "same", seed, 25, -100.0))
        longer = record("optuna", "gp", "same", seed, 50, 100.0 + seed)
        longer["regret"]["25"] = 200.0
        recs.append(longer)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "a.jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
            f.write('{"bench": "suite", "cut off')  # a line cut by a killed run
        res = report.Results(report.read_records([tmp]))
    v = {p: report.compare(res, "default", p, 50) for p in ("easy", "hard", "same")}
    check(v["easy"][4] == "better" and v["easy"][0] == "tpe", f"easy: {v['easy'][0::4]}")
    check(v["hard"][4] == "worse" and v["hard"][0] == "gp", f"hard: {v['hard'][0::4]}")
    check(v["same"][4] == "tie" and v["same"][0] == "tpe", f"same: {v['same'][0::4]}")
    check(res.values("optuna", "gp", "same", 25) == [200.0] * 20,
          "the 25-trial runs were not superseded by the 50-trial ones")
    out = io.StringIO()
    with redirect_stdout(out):
        report.main_table(res, type("Args", (), {"tuner": "default"}), [50],
                          ["easy", "hard", "same"])
    check("| 50 | 3 | 1 | 1 | 1 | hard |" in out.getvalue(), "summary row:\n" + out.getvalue())
    out = io.StringIO()
    with redirect_stdout(out):
        report.wide_table(res, "default", [50], ["easy", "hard", "same"])
    text = out.getvalue()
    check("| easy | **0.105** | tpe 10.5 |" in text, "wide, easy:\n" + text)
    check("| hard | *14.5* | gp 1.05 |" in text and "(worse: " in text, "wide, hard:\n" + text)


def test_versus():
    recs = []
    for seed in range(20):
        recs.append(record("tuner", "new", "faster", seed, 50, 0.1 * (seed + 1)))
        recs.append(record("tuner", "old", "faster", seed, 50, 10.0 + seed))
        recs.append(record("tuner", "new", "same", seed, 50, float(seed)))
        recs.append(record("tuner", "old", "same", seed, 50, float(19 - seed)))
        if seed < 3:  # too few seeds in common: left out
            recs.append(record("tuner", "old", "few", seed, 50, 1.0))
        recs.append(record("tuner", "new", "few", seed, 50, 5.0))
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "a.jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        res = report.Results(report.read_records([tmp]))
    out = io.StringIO()
    with redirect_stdout(out):
        report.versus_table(res, "new", "old", [50], ["faster", "same", "few"])
    text = out.getvalue()
    check("| faster | 50 | 20 | 19.5 | 1.05 |" in text and "**better**" in text,
          "versus, faster:\n" + text)
    check("| same | 50 | 20 | 9.5 | 9.5 |" in text and "| few |" not in text,
          "versus, same / few:\n" + text)
    check("| 50 | 2 | 1 | 1 | 0 | faster | - |" in text, "versus summary:\n" + text)


def test_distribution():
    recs = []
    for seed in range(20):
        # Regrets 0..19 for tuner's default: median 9.5, p75 14.25; random's median 10.5, so the
        # 9 seeds with regret 11..19 are stuck.
        r = record("tuner", "default", "p", seed, 50, float(seed))
        r["duplicates"] = 1 if seed < 3 else 0
        recs.append(r)
        recs.append(record("tuner", "random", "p", seed, 50, float(seed + 1)))
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "a.jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        res = report.Results(report.read_records([tmp]))
    check(res.quantile("tuner", "default", "p", 50, 0.75) == 14.25,
          f"p75 {res.quantile('tuner', 'default', 'p', 50, 0.75)}")
    check(res.stuck("tuner", "default", "p", 50) == 9 / 20,
          f"stuck {res.stuck('tuner', 'default', 'p', 50)}")
    check(res.stuck("tuner", "default", "p", 25) is None, "no regrets at 25: no stuck fraction")
    out = io.StringIO()
    with redirect_stdout(out):
        report.distribution_table(res, [("tuner", "default"), ("optuna", "gp")], [50], ["p"])
    text = out.getvalue()
    check("| p | 50 | 10.5 | 9.5 | 14.2 | 45% |" in text, "distribution row:\n" + text)
    check("| tuner default | 20 | 3 | p 3 |" in text, "duplicates row:\n" + text)


def test_anchors():
    """An anchor (impl "anchor") is a column of every table and can be the reference."""
    recs = []
    for seed in range(10):
        recs.append(record("tuner", "default", "q", seed, 50, 1.0 + seed))
        recs.append(record("tuner", "random", "q", seed, 50, 5.0 + seed))
        recs.append(record("optuna", "tpe", "q", seed, 50, 3.0 + seed))
        smac = record("anchor", "smac", "q", seed, 50, 0.1 * (seed + 1))
        smac["version"], smac["duplicates"] = "2.4.1", 2
        recs.append(smac)
        recs.append(record("anchor", "hebo", "q", seed, 50, 2.0 + seed))
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "a.jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        res = report.Results(report.read_records([tmp]))
    c = report.compare(res, "default", "q", 50)
    check(c[0] == "SMAC3" and c[4] == "worse", f"reference {c[0::4]}, expected SMAC3, worse")
    out = io.StringIO()
    with redirect_stdout(out):
        report.main_table(res, type("Args", (), {"tuner": "default"}), [50], ["q"])
        report.distribution_table(res, [("tuner", "default"), ("anchor", "smac"),
                                        ("anchor", "hebo")], [50], ["q"])
    text = out.getvalue()
    check("| HEBO | SMAC3 | best reference |" in text, "main header:\n" + text)
    check("| q | 50 | 10/10 | 5.5 | - | 7.5 | - | 6.5 | 0.55 | SMAC3 0.55 |" in text,
          "main row:\n" + text)
    check("SMAC3 2.4.1" in text, "the anchor's version is not named:\n" + text)
    # random's median 9.5: of tuner's 1..10 one seed is stuck, of HEBO's 2..11 two.
    check("| q | 50 | 9.5 | 5.5 | 7.75 | 10% | 0.55 | 0.775 | 0% | 6.5 | 8.75 | 20% |" in text,
          "distribution row:\n" + text)
    check("| SMAC3 | 10 | 20 | q 20 |" in text, "duplicates row:\n" + text)


def test_ask_times():
    """Time per ask: a run's seconds after k trials over k, median over the seeds, per sampler."""
    recs = []
    for seed in range(5):
        ours = record("tuner", "default", "t", seed, 50, 1.0)
        ours["seconds"] = {"50": 0.05 * (seed + 1)}  # 1, 2, 3, 4, 5 ms an ask: median 3
        recs.append(ours)
        smac = record("anchor", "smac", "t", seed, 50, 1.0)
        smac["seconds"] = {"50": 20.0}  # 400 ms an ask
        recs.append(smac)
    recs.append(record("optuna", "tpe", "t", 0, 50, 1.0))  # no seconds: no column
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "a.jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        res = report.Results(report.read_records([tmp]))
    out = io.StringIO()
    with redirect_stdout(out):
        report.ask_time_table(res, [25, 50], ["t"])
    text = out.getvalue()
    check("| problem | trials | tuner default ms | SMAC3 ms |" in text, "header:\n" + text)
    check("| t | 50 | 3 | 400 |" in text, "row:\n" + text)
    check("| t | 25 |" not in text, "a budget without times has no row:\n" + text)


if __name__ == "__main__":
    test_ask_times()
    test_anchors()
    test_p_values()
    test_verdicts()
    test_versus()
    test_distribution()
    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failures" if failures else "ok")
    sys.exit(1 if failures else 0)
