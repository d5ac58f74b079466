"""MO-ASHA's rung decisions checked against a brute-force non-dominated sort (for the e2e tests).

check_rung_decisions(trials, steps, stopped, rungs, reduction_factor, losses) walks the trials in
number order; at each rung a trial reached, the trials before it that reached the rung compete,
n of them with it, and the top k by NSGA-II's selection stay: k is n // reduction_factor (at
least 1), raised to the size of the first front (the finite points no other dominates) plus the
second front's boundary points (per objective whose values differ on it, its least and its
greatest) up to n - n // reduction_factor. A PRUNED trial must be stopped at its last rung and
nowhere before; a COMPLETE one never. Returns the decisions made.
  trials: number -> (trial_id, state); steps: trial_id -> step -> objective values;
  stopped: trial_id -> the step it was stopped at; losses: objective values -> values to minimize.
read_study(db_path, names) reads those three from a study's SQLite file.
"""
import json
import math
import sqlite3


def read_study(db_path, names):
    """(trials, steps, stopped) of the study in db_path, the step values of the metrics `names`
    in that order (NaN where a step lacks one), and the connection for further reads."""
    db = sqlite3.connect(db_path)
    trials = {n: (tid, state) for tid, n, state in db.execute(
        "SELECT trial_id, number, state FROM trials")}
    stopped = {tid: json.loads(v) for tid, v in db.execute(
        "SELECT trial_id, value_json FROM trial_system_attributes"
        " WHERE key = 'tuner:stopped_at_step'")}
    steps = {}
    for tid, step, name, value in db.execute(
            "SELECT trial_id, step, name, value FROM tuner_trial_step_metrics"):
        v = steps.setdefault(tid, {}).setdefault(step, [math.nan] * len(names))
        if name in names:
            v[names.index(name)] = value
    return trials, steps, stopped, db


def non_dominated(points, among):
    """The indices in `among` whose loss vectors no other of `among` dominates."""
    return [a for a in among if not any(
        all(x <= y for x, y in zip(points[b], points[a])) and points[b] != points[a]
        for b in among)]


def first_front_and_boundary(points):
    """The number of finite loss vectors no other finite one dominates, plus the second front's
    boundary points: per objective whose values differ on that front, its least (ties: the lower
    index) and its greatest (ties: the higher index)."""
    finite = [i for i, p in enumerate(points) if all(math.isfinite(v) for v in p)]
    first = non_dominated(points, finite)
    second = non_dominated(points, [i for i in finite if i not in first])
    boundary = set()
    for j in range(len(points[0]) if points else 0):
        order = sorted(second, key=lambda i: (points[i][j], i))
        if order and points[order[0]][j] != points[order[-1]][j]:
            boundary |= {order[0], order[-1]}
    return len(first) + len(boundary)


def kept(points, k):
    """NSGA-II selection of k of the loss vectors: whole non-dominated fronts, then the largest
    crowding distance; ties to the lower index; points with a non-finite value last."""
    n = len(points)
    m = len(points[0]) if points else 0
    finite = [i for i in range(n) if all(math.isfinite(v) for v in points[i])]
    left, chosen = finite, []
    while left and len(chosen) < k:
        front = [a for a in left if not any(
            all(x <= y for x, y in zip(points[b], points[a])) and points[b] != points[a]
            for b in left)]
        if len(chosen) + len(front) <= k:
            chosen += front
        else:
            d = {i: 0.0 for i in front}
            for j in range(m):
                order = sorted(front, key=lambda i: (points[i][j], i))
                lo, hi = points[order[0]][j], points[order[-1]][j]
                if lo == hi:
                    continue
                for p, i in enumerate(order):
                    before = points[order[p - 1]][j] if p > 0 else -math.inf
                    after = points[order[p + 1]][j] if p + 1 < len(order) else math.inf
                    d[i] += 0.0 if before == after else (after - before) / (hi - lo)
            chosen += sorted(front, key=lambda i: (-d[i], i))[:k - len(chosen)]
        left = [i for i in left if i not in front]
    chosen += [i for i in range(n) if i not in finite][:max(0, k - len(chosen))]
    return set(chosen)


def check_rung_decisions(trials, steps, stopped, rungs, reduction_factor, losses):
    def at_rung(tid, r):
        later = sorted(s for s in steps.get(tid, {}) if s >= r)
        return losses(steps[tid][later[0]]) if later else None

    decided = 0
    for n in sorted(trials):
        tid, state = trials[n]
        last = stopped.get(tid) if state == "PRUNED" else max(steps[tid])
        assert last is not None, (n, state)
        for r in rungs:
            if r > last:
                break
            own = at_rung(tid, r)
            competitors = [at_rung(trials[o][0], r) for o in sorted(trials) if o < n]
            points = [c for c in competitors if c is not None] + [own]
            size = len(points)
            k = max(size // reduction_factor, 1,
                    min(first_front_and_boundary(points), size - size // reduction_factor))
            stays = size - 1 in kept(points, k)
            should_stop = state == "PRUNED" and r == last
            assert stays != should_stop, (n, state, r, points)
            decided += 1
        if state == "PRUNED":
            assert last in rungs, (n, last)  # a report at every step: stopped at the rung itself
    return decided
