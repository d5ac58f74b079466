"""The function suite's problems for the Optuna side, through the C++ definitions.

bench/suite/problems.cc defines every problem once; libbench_suite.so (built with the C++
runner, target bench_suite) exports them as C functions, loaded here with ctypes, so Optuna's
samplers are scored on the very objectives, and see the very noise, that tuner's are.
Standard library only (bench/suite/values_test.py uses it without Optuna).

A point is one float per parameter in the problem's order: floats and ints as their value, a
categorical as the index of its choice, NaN for a parameter that is not active.
"""

import ctypes
import json
import math
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_LIB = os.path.join(ROOT, "build", "bench", "suite", "libbench_suite.so")


def default_lib():
    """$BENCH_SUITE_LIB, else build/bench/suite/libbench_suite.so under the repository."""
    return os.environ.get("BENCH_SUITE_LIB", DEFAULT_LIB)


class SuiteError(Exception):
    pass


class Problem:
    def __init__(self, suite, record):
        self._suite = suite
        self.name = record["name"]
        self.group = record["group"]
        self.summary = record["summary"]
        self.optimum = record["optimum"]
        self.noise_sd = record["noise_sd"]
        self.params = record["params"]
        self.minimizer = [math.nan if v is None else v for v in record["minimizer"]]
        self._index = {p["name"]: i for i, p in enumerate(self.params)}

    def is_active(self, index, point):
        spec = self.params[index]
        if not spec["parent"]:
            return True
        parent = point[self._index[spec["parent"]]]
        return not math.isnan(parent) and int(parent) in spec["parent_choices"]

    def suggest(self, trial):
        """Suggests every active parameter through an Optuna trial (define-by-run, in order)."""
        point = [math.nan] * len(self.params)
        for i, s in enumerate(self.params):
            if not self.is_active(i, point):
                continue
            if s["type"] == "float":
                point[i] = trial.suggest_float(s["name"], s["low"], s["high"], log=s["log"])
            elif s["type"] == "int":
                point[i] = float(trial.suggest_int(s["name"], int(s["low"]), int(s["high"]),
                                                   log=s["log"]))
            else:
                point[i] = float(s["choices"].index(trial.suggest_categorical(s["name"],
                                                                              s["choices"])))
        return point

    def params_of(self, point):
        """The point as named params (categoricals by choice), inactive ones left out."""
        out = {}
        for s, v in zip(self.params, point):
            if math.isnan(v):
                continue
            if s["type"] == "categorical":
                out[s["name"]] = s["choices"][int(v)]
            elif s["type"] == "int":
                out[s["name"]] = int(v)
            else:
                out[s["name"]] = v
        return out

    def evaluate(self, point, seed=0, number=0):
        """(noiseless, observed) at `point` for trial `number` of a study of seed `seed`."""
        return self._suite.evaluate(self.name, point, seed, number)


class Suite:
    def __init__(self, lib_path=None):
        lib_path = lib_path or default_lib()
        if not os.path.exists(lib_path):
            raise SuiteError(f"{lib_path} not found: build the target bench_suite "
                             "(cmake --build build --target bench_suite) or pass --lib")
        lib = ctypes.CDLL(lib_path)
        lib.bench_suite_describe.restype = ctypes.c_char_p
        lib.bench_suite_error.restype = ctypes.c_char_p
        lib.bench_suite_select.restype = ctypes.c_char_p
        lib.bench_suite_select.argtypes = [ctypes.c_char_p]
        lib.bench_suite_evaluate.restype = ctypes.c_int
        lib.bench_suite_evaluate.argtypes = [
            ctypes.c_char_p, ctypes.POINTER(ctypes.c_double), ctypes.c_int, ctypes.c_uint64,
            ctypes.c_int, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]
        self._lib = lib
        described = json.loads(lib.bench_suite_describe().decode())
        self.problems = {r["name"]: Problem(self, r) for r in described["problems"]}

    def select(self, spec):
        """The problems a comma-separated list of names, groups and sets names (problems.h)."""
        names = self._lib.bench_suite_select(spec.encode())
        if names is None:
            raise SuiteError(self._lib.bench_suite_error().decode())
        return [self.problems[n] for n in json.loads(names.decode())]

    def evaluate(self, name, point, seed=0, number=0):
        values = (ctypes.c_double * len(point))(*point)
        noiseless, observed = ctypes.c_double(), ctypes.c_double()
        rc = self._lib.bench_suite_evaluate(name.encode(), values, len(point), seed, number,
                                            ctypes.byref(noiseless), ctypes.byref(observed))
        if rc != 0:
            raise SuiteError(self._lib.bench_suite_error().decode())
        return noiseless.value, observed.value
