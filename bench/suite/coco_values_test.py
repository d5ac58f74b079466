#!/usr/bin/env python3
"""Checks the suite's BBOB functions (bench/suite/bbob.cc) against COCO's own (PyPI
coco-experiment, module cocoex), value for value, and the COCO problems of
bench/optuna/external_problems.py.

usage: coco_values_test.py [--lib libbench_suite.so]

What is compared, and what cannot be:
1. The suite's problems use instances of their own (bbob.h), so they are compared at COCO's
   instances instead: for f1 sphere, f2 separable ellipsoid, f3 separable Rastrigin, f5 linear
   slope, f8 Rosenbrock and f20 Schwefel, which depend on the instance only through the optimum
   x_opt (f20 through its signs), COCO's x_opt (cocoex's Problem._best_parameter; for f20 its
   signs times 4.2096874637 / 2, the constant COCO's code uses, where the definitions paper and
   bbob.cc's own instances use 4.2096874633 / 2, a difference of about 1e-5 in f) is given to
   the suite's definition (bench_suite_bbob_at), and f(x) - f_opt must agree with cocoex's
   within 1e-9 (relative) at random points of [-5, 5]^d, points near x_opt and points outside
   the box (the penalties), in 2, 3, 5, 10 and 20 dimensions, instances 1, 2 and 7.
   f6 attractive sector, f10 rotated ellipsoid, f15 rotated Rastrigin and f21 Gallagher also use
   COCO's rotations R, Q (and f21 its 101 peaks), which cocoex does not expose: for them only
   the transforms shared with the functions above (T_osz, T_asy, Lambda, f_pen) are checked, not
   the functions themselves.
2. Each COCO problem of external_problems.py: f(x_opt) is its optimum, no random point of its
   space is below it, the integer variables of bbob-mixint are integers of COCO's bounds.
cocoex is this interpreter's, else .venv-bench's (bench/suite/run_suite makes it), else that of
--venv, made with coco-experiment from PyPI when missing; when none can be had: exit status 77,
"skipped" and why (ctest counts it skipped).
"""

import argparse
import ctypes
import math
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "optuna"))

SKIP = 77
# f20: COCO's code puts the optimum at +-4.2096874637 / 2 but reports +-4.2096874633 / 2 (the
# constant of its definitions paper, which bbob.cc uses) as the best parameter; the suite's f20
# is compared at COCO's code's optimum.
COCO_SCHWEFEL_OPT = 4.2096874637 / 2
IDS = (1, 2, 3, 5, 8, 20)
DIMS = (2, 3, 5, 10, 20)
INSTANCES = (1, 2, 7)

failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


def cocoex_or_skip(venv):
    """Goes on with an interpreter that has cocoex: this one, .venv-bench's, or `venv`'s (made
    with coco-experiment from PyPI when missing); exits 77 when none can be had."""
    try:
        import cocoex  # noqa: F401
        return
    except ImportError:
        pass
    for prefix in (os.path.join(ROOT, ".venv-bench"), venv):
        python = os.path.join(prefix, "bin", "python")
        if os.path.realpath(sys.prefix) == os.path.realpath(prefix):
            continue  # this interpreter, which has no cocoex
        if not os.path.exists(python) and prefix == venv:
            print(f"coco values: creating {venv} with coco-experiment from PyPI", flush=True)
            made = subprocess.run([sys.executable, "-m", "venv", venv]).returncode == 0 and \
                subprocess.run([python, "-m", "pip", "install", "-q", "coco-experiment"]).returncode == 0
            if not made:
                break
        if os.path.exists(python) and subprocess.run(
                [python, "-c", "import cocoex"], capture_output=True).returncode == 0:
            os.execv(python, [python] + sys.argv)
    print(f"skipped: cocoex (PyPI coco-experiment) could not be installed into {venv}, and "
          "neither this interpreter nor .venv-bench has it")
    sys.exit(SKIP)


def load_lib(path):
    lib = ctypes.CDLL(path)
    lib.bench_suite_error.restype = ctypes.c_char_p
    lib.bench_suite_bbob_at.restype = ctypes.c_int
    lib.bench_suite_bbob_at.argtypes = [ctypes.c_int, ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_double),
                                        ctypes.POINTER(ctypes.c_double),
                                        ctypes.POINTER(ctypes.c_double)]
    return lib


def suite_value(lib, fid, x_opt, x):
    d = len(x)
    value = ctypes.c_double()
    rc = lib.bench_suite_bbob_at(fid, d, (ctypes.c_double * d)(*x_opt), (ctypes.c_double * d)(*x),
                                 ctypes.byref(value))
    if rc != 0:
        raise RuntimeError(lib.bench_suite_error().decode())
    return value.value


def test_bbob_values(lib):
    import cocoex
    import external_problems
    rng = random.Random(5)
    compared = 0
    for fid in IDS:
        for d in DIMS:
            for inst in INSTANCES:
                coco = cocoex.Suite("bbob", f"instances: {inst}",
                                    f"function_indices: {fid} dimensions: {d}")[0]
                x_opt, f_opt = external_problems.coco_optimum(coco)
                if fid == 20:  # COCO's code's constant, not the one it reports (see above)
                    x_opt = [math.copysign(COCO_SCHWEFEL_OPT, v) for v in x_opt]
                check(abs(suite_value(lib, fid, x_opt, x_opt)) < 1e-9,
                      f"f{fid} d{d} i{inst}: the suite's f at COCO's x_opt is not 0")
                points = [[rng.uniform(-5, 5) for _ in range(d)] for _ in range(20)]
                points += [[v + rng.gauss(0, 0.01) for v in x_opt] for _ in range(5)]
                points += [[rng.uniform(-7, 7) for _ in range(d)] for _ in range(5)]
                for x in points:
                    theirs = float(coco(x)) - f_opt
                    ours = suite_value(lib, fid, x_opt, x)
                    compared += 1
                    check(math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-9),
                          f"f{fid} d{d} instance {inst}: suite {ours!r}, cocoex {theirs!r} "
                          f"at {x}")
    # The functions that need COCO's rotations are refused, not silently compared.
    for fid in (6, 10, 15, 21):
        try:
            suite_value(lib, fid, [0.0, 0.0], [0.0, 0.0])
            check(False, f"f{fid}: bench_suite_bbob_at accepted a function it cannot define")
        except RuntimeError as e:
            check("rotations" in str(e), f"f{fid}: unclear error: {e}")
    return compared


def test_external_coco():
    import cocoex
    import external_problems
    rng = random.Random(6)
    names = external_problems.coco_names("coco")
    for name in names:
        p = external_problems.make(name)
        _, suite, f, _, d = name.split("_")
        coco = cocoex.Suite("bbob" if suite == "bbob" else "bbob-mixint",
                            f"instances: {external_problems.COCO_INSTANCE}",
                            f"function_indices: {f[1:]} dimensions: {d[1:]}")[0]
        x_opt, f_opt = external_problems.coco_optimum(coco)
        check(p.optimum == f_opt, f"{name}: optimum {p.optimum} != COCO's f(x_opt) {f_opt}")
        check(p.evaluate(x_opt)[0] == p.optimum, f"{name}: f(x_opt) != optimum")
        for s, v in zip(p.params, x_opt):
            if s["type"] == "int":
                check(v == int(v) and s["low"] <= v <= s["high"],
                      f"{name}: x_opt's integer {s['name']} = {v} is not one of its values")
        for _ in range(200):
            x = [float(rng.randint(int(s["low"]), int(s["high"]))) if s["type"] == "int"
                 else rng.uniform(s["low"], s["high"]) for s in p.params]
            v = p.evaluate(x)[0]
            check(v >= p.optimum - 1e-9, f"{name}: {x} is below the optimum: {v} < {p.optimum}")
    return len(names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=os.path.join(ROOT, "build", "bench", "suite",
                                                      "libbench_suite.so"))
    parser.add_argument("--venv", default=os.path.join(ROOT, "build", "coco-venv"),
                        help="where coco-experiment is installed when no interpreter has it")
    args = parser.parse_args()
    cocoex_or_skip(args.venv)
    lib = load_lib(args.lib)
    compared = test_bbob_values(lib)
    problems = test_external_coco()
    if failures:
        for f in failures[:30]:
            print("FAIL:", f)
        print(f"{len(failures)} failures")
        return 1
    print(f"ok: {compared} values of f{', f'.join(map(str, IDS))} agree with cocoex; "
          f"{problems} COCO problems of external_problems.py checked; f6, f10, f15, f21 not "
          "compared (cocoex does not expose their rotations)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
