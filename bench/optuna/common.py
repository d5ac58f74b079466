"""Shared pieces of the Optuna peers of bench/sampler_overhead.cc and bench/sampler_quality.cc.

The workloads here must stay identical to the C++ ones (bench/bench_common.h): the same
10-dimensional mixed space and objective for the overhead benchmark, the same test functions,
bounds and optima for the quality benchmark.
"""

import json
import math
import sys
import warnings

import optuna

# Sampler names shared with the C++ benchmarks and the driver.
#   random   RandomSampler
#   tpe      TPESampler(multivariate=False): the univariate (independent) TPE
#   tpe-mv   TPESampler(multivariate=True)
#   default  TPESampler() with every argument at its default (Optuna 5: multivariate for a
#            single objective, constant_liar=True; Optuna 3.1: univariate, no constant liar)
SAMPLERS = ("random", "tpe", "tpe-mv", "default")


def quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")


def make_sampler(name, seed):
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, multivariate=False)
    if name == "tpe-mv":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True)
    if name == "default":
        return optuna.samplers.TPESampler(seed=seed)
    raise SystemExit(f"unknown sampler {name!r}: expected one of {', '.join(SAMPLERS)}")


def emit(record):
    record = dict(record)
    record["impl"] = "optuna"
    record["version"] = optuna.__version__
    print(json.dumps(record), flush=True)


def parse_list(text, convert=int):
    return [convert(x) for x in text.split(",") if x]


# --- The 10-dimensional mixed space of the overhead benchmark --------------------------------

OPTIMIZERS = ["sgd", "adam", "rmsprop", "adagrad"]
ACTIVATIONS = ["relu", "tanh", "gelu"]


def mixed_distributions():
    D = optuna.distributions
    return {
        "x0": D.FloatDistribution(-5.0, 5.0),
        "x1": D.FloatDistribution(-5.0, 5.0),
        "x2": D.FloatDistribution(-5.0, 5.0),
        "lr": D.FloatDistribution(1e-5, 1e-1, log=True),
        "weight_decay": D.FloatDistribution(1e-6, 1e-2, log=True),
        "layers": D.IntDistribution(1, 8),
        "units": D.IntDistribution(16, 1024, log=True),
        "batch": D.IntDistribution(1, 100),
        "optimizer": D.CategoricalDistribution(OPTIMIZERS),
        "activation": D.CategoricalDistribution(ACTIVATIONS),
    }


def suggest_mixed(trial):
    """Define-by-run, in the same order and with the same bounds as the C++ benchmark."""
    return {
        "x0": trial.suggest_float("x0", -5.0, 5.0),
        "x1": trial.suggest_float("x1", -5.0, 5.0),
        "x2": trial.suggest_float("x2", -5.0, 5.0),
        "lr": trial.suggest_float("lr", 1e-5, 1e-1, log=True),
        "weight_decay": trial.suggest_float("weight_decay", 1e-6, 1e-2, log=True),
        "layers": trial.suggest_int("layers", 1, 8),
        "units": trial.suggest_int("units", 16, 1024, log=True),
        "batch": trial.suggest_int("batch", 1, 100),
        "optimizer": trial.suggest_categorical("optimizer", OPTIMIZERS),
        "activation": trial.suggest_categorical("activation", ACTIVATIONS),
    }


def mixed_objective(p):
    """A cheap deterministic function of the mixed space (minimum 0)."""
    v = (p["x0"] - 1.0) ** 2 + (p["x1"] + 2.0) ** 2 + 0.5 * p["x2"] ** 2
    v += (math.log10(p["lr"]) + 3.0) ** 2 + 0.1 * (math.log10(p["weight_decay"]) + 4.0) ** 2
    v += 0.2 * (p["layers"] - 4) ** 2 + (math.log2(p["units"]) - 8.0) ** 2 / 4.0
    v += ((p["batch"] - 32) / 32.0) ** 2
    v += OPTIMIZERS.index(p["optimizer"]) * 0.5 + ACTIVATIONS.index(p["activation"]) * 0.25
    return v


# --- The test functions of the quality benchmark ---------------------------------------------


def branin(x):
    a, b, c = 1.0, 5.1 / (4.0 * math.pi ** 2), 5.0 / math.pi
    r, s, t = 6.0, 10.0, 1.0 / (8.0 * math.pi)
    return a * (x[1] - b * x[0] ** 2 + c * x[0] - r) ** 2 + s * (1.0 - t) * math.cos(x[0]) + s


def rosenbrock(x):
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2 for i in range(len(x) - 1))


def ackley(x):
    d = len(x)
    s1 = sum(v * v for v in x) / d
    s2 = sum(math.cos(2.0 * math.pi * v) for v in x) / d
    return -20.0 * math.exp(-0.2 * math.sqrt(s1)) - math.exp(s2) + 20.0 + math.e


# name -> (function, bounds per dimension, known optimum)
FUNCTIONS = {
    "branin": (branin, [(-5.0, 10.0), (0.0, 15.0)], 0.397887357729738),
    "rosenbrock10": (rosenbrock, [(-5.0, 10.0)] * 10, 0.0),
    "ackley10": (ackley, [(-32.768, 32.768)] * 10, 0.0),
}


def fail(message):
    print(message, file=sys.stderr)
    raise SystemExit(2)
