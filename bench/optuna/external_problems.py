"""Problems of the function suite defined outside its C++ library: COCO's own suites (PyPI
coco-experiment, module cocoex) and model fits on scikit-learn's bundled data sets.

They have the interface of suite_problems.Problem (name, group, summary, optimum, noise_sd,
params, minimizer, is_active, suggest, params_of, evaluate), so Optuna's samplers and the
anchors run on them as on the suite's own; tuner's samplers run on them through
`sampler_suite --external` (anchor_suite.py drives it). All are deterministic (noise_sd 0).

COCO, chosen once (instance 1 of each; functions and dimensions the suite's own BBOB problems do
not use, plus bbob-mixint, whose integer variables COCO defines):
  bbob         f4 Buche-Rastrigin 5-D, f7 step ellipsoid 3-D, f11 discus 3-D, f12 bent cigar 5-D,
               f14 different powers 10-D, f17 Schaffers F7 5-D, f22 Gallagher 21 peaks 5-D
  bbob-mixint  f2 ellipsoid 5-D, f10 rotated ellipsoid 5-D, f15 rotated Rastrigin 5-D,
               f21 Gallagher 101 peaks 5-D, f10 rotated ellipsoid 10-D
A problem is named coco_<suite>_f<F>_i<I>_d<D>; its parameters x0.. are COCO's variables with
COCO's bounds (bbob-mixint: the integer ones first, as ints). The optimum is COCO's f_opt, the
value at the optimal point that cocoex reports, so the regret is f - f_opt.

Model fits (group "fit"): the objective is the cross-validated classification error
(1 - mean accuracy over 3 fixed stratified folds, shuffled with seed 0; the model's own seed 0),
which depends on the point only. The best error is not known: the optimum is given as 0, so the
"regret" is the error itself (comparisons between samplers are unchanged by the offset).
  fit_svm_digits       SVC(rbf) on digits (1,797 images, standardized): C, gamma (log floats)
  fit_gb_wine          GradientBoostingClassifier on wine: n_estimators, max_depth (ints),
                       learning_rate (log), subsample
  fit_rf_breast_cancer RandomForestClassifier on breast_cancer: n_estimators, max_depth,
                       min_samples_leaf (ints), max_features (float), criterion (categorical)

Sets for --problems: coco (both COCO suites), coco-bbob, coco-mixint, fit, external (all).
"""

COCO_BBOB = [(4, 5), (7, 3), (11, 3), (12, 5), (14, 10), (17, 5), (22, 5)]
COCO_MIXINT = [(2, 5), (10, 5), (15, 5), (21, 5), (10, 10)]
COCO_INSTANCE = 1


def _float(name, low, high, log=False):
    return {"name": name, "type": "float", "low": low, "high": high, "log": log, "choices": [],
            "parent": "", "parent_choices": []}


def _int(name, low, high, log=False):
    return dict(_float(name, low, high, log), type="int")


def _cat(name, choices):
    return dict(_float(name, 0, len(choices) - 1), type="categorical", choices=list(choices))


class ExternalProblem:
    noise_sd = 0.0
    minimizer = []

    def __init__(self, name, group, summary, params, optimum, objective):
        self.name, self.group, self.summary = name, group, summary
        self.params, self.optimum = params, optimum
        self._objective = objective
        self._cache = {}

    def is_active(self, index, point):
        return True

    def suggest(self, trial):
        point = []
        for s in self.params:
            if s["type"] == "float":
                point.append(trial.suggest_float(s["name"], s["low"], s["high"], log=s["log"]))
            elif s["type"] == "int":
                point.append(float(trial.suggest_int(s["name"], int(s["low"]), int(s["high"]),
                                                     log=s["log"])))
            else:
                point.append(float(s["choices"].index(
                    trial.suggest_categorical(s["name"], s["choices"]))))
        return point

    def params_of(self, point):
        out = {}
        for s, v in zip(self.params, point):
            out[s["name"]] = (s["choices"][int(v)] if s["type"] == "categorical"
                              else int(v) if s["type"] == "int" else v)
        return out

    def evaluate(self, point, seed=0, number=0):
        """(noiseless, observed): the same, these problems have no noise. Cached by point."""
        key = tuple(float(v) for v in point)
        if key not in self._cache:
            self._cache[key] = float(self._objective(list(key)))
        value = self._cache[key]
        return value, value

    def describe(self):
        """The header's problem for `sampler_suite --external`."""
        return {"name": self.name, "optimum": self.optimum, "noise_sd": 0.0,
                "params": self.params}


# --- COCO -----------------------------------------------------------------------------------

def coco_optimum(problem):
    """(x_opt, f_opt) of a cocoex problem: cocoex writes the optimal point to a file in the
    working directory (Problem._best_parameter("print")), read back here."""
    import os
    import tempfile
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            problem._best_parameter("print")
            with open("._bbob_problem_best_parameter.txt") as f:
                x = [float(v) for v in f.read().split()]
        finally:
            os.chdir(cwd)
    return x, float(problem(x))


def coco_problem(suite, function, dim, instance=COCO_INSTANCE):
    import cocoex
    coco = cocoex.Suite(suite, f"instances: {instance}",
                        f"function_indices: {function} dimensions: {dim}")[0]
    ints = coco.number_of_integer_variables
    params = [(_int if i < ints else _float)(f"x{i}", float(lo), float(hi))
              for i, (lo, hi) in enumerate(zip(coco.lower_bounds, coco.upper_bounds))]
    _, fopt = coco_optimum(coco)
    short = "bbob" if suite == "bbob" else "mixint"
    name = f"coco_{short}_f{function}_i{instance}_d{dim}"
    summary = (f"COCO {suite} f{function} instance {instance}, {dim}-D"
               + (f" ({ints} integers)" if ints else "") + f"; f_opt {fopt}")
    return ExternalProblem(name, f"coco-{short}", summary, params, fopt, lambda x: coco(x))


# --- Model fits -----------------------------------------------------------------------------

def _cv_error(model, data):
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    x, y = data
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    return 1.0 - float(cross_val_score(model, x, y, cv=folds).mean())


def fit_svm_digits():
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    x, y = load_digits(return_X_y=True)
    data = (StandardScaler().fit_transform(x), y)
    return ExternalProblem(
        "fit_svm_digits", "fit", "SVC(rbf) on digits: C in [1e-2, 1e3], gamma in [1e-5, 1] "
        "(log); 3-fold CV error", [_float("C", 1e-2, 1e3, True), _float("gamma", 1e-5, 1.0, True)],
        0.0, lambda p: _cv_error(SVC(C=p[0], gamma=p[1]), data))


def fit_gb_wine():
    from sklearn.datasets import load_wine
    from sklearn.ensemble import GradientBoostingClassifier
    data = load_wine(return_X_y=True)
    return ExternalProblem(
        "fit_gb_wine", "fit", "GradientBoostingClassifier on wine: n_estimators 5..50, "
        "max_depth 1..6, learning_rate [1e-3, 1] (log), subsample [0.3, 1]; 3-fold CV error",
        [_int("n_estimators", 5, 50), _int("max_depth", 1, 6),
         _float("learning_rate", 1e-3, 1.0, True), _float("subsample", 0.3, 1.0)],
        0.0, lambda p: _cv_error(GradientBoostingClassifier(
            n_estimators=int(p[0]), max_depth=int(p[1]), learning_rate=p[2], subsample=p[3],
            random_state=0), data))


def fit_rf_breast_cancer():
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier
    data = load_breast_cancer(return_X_y=True)
    criteria = ["gini", "entropy"]
    return ExternalProblem(
        "fit_rf_breast_cancer", "fit", "RandomForestClassifier on breast_cancer: n_estimators "
        "5..50, max_depth 1..12, min_samples_leaf 1..30 (log), max_features [0.05, 1], "
        "criterion; 3-fold CV error",
        [_int("n_estimators", 5, 50), _int("max_depth", 1, 12),
         _int("min_samples_leaf", 1, 30, True), _float("max_features", 0.05, 1.0),
         _cat("criterion", criteria)],
        0.0, lambda p: _cv_error(RandomForestClassifier(
            n_estimators=int(p[0]), max_depth=int(p[1]), min_samples_leaf=int(p[2]),
            max_features=p[3], criterion=criteria[int(p[4])], random_state=0, n_jobs=1), data))


FITS = {"fit_svm_digits": fit_svm_digits, "fit_gb_wine": fit_gb_wine,
        "fit_rf_breast_cancer": fit_rf_breast_cancer}


def coco_names(which):
    out = []
    if which in ("coco", "coco-bbob"):
        out += [f"coco_bbob_f{f}_i{COCO_INSTANCE}_d{d}" for f, d in COCO_BBOB]
    if which in ("coco", "coco-mixint"):
        out += [f"coco_mixint_f{f}_i{COCO_INSTANCE}_d{d}" for f, d in COCO_MIXINT]
    return out


def expand(item):
    """The problem names an item of --problems stands for here; [] when it is not external."""
    if item in ("coco", "coco-bbob", "coco-mixint"):
        return coco_names(item)
    if item == "fit":
        return list(FITS)
    if item == "external":
        return coco_names("coco") + list(FITS)
    if item in FITS or item.startswith("coco_"):
        return [item]
    return []


def make(name):
    if name in FITS:
        return FITS[name]()
    parts = name.split("_")
    try:
        assert parts[0] == "coco" and parts[1] in ("bbob", "mixint") and len(parts) == 5
        f, i, d = int(parts[2][1:]), int(parts[3][1:]), int(parts[4][1:])
    except (AssertionError, ValueError):
        raise ValueError(f"{name}: not an external problem (coco_bbob_f<F>_i<I>_d<D>, "
                         f"coco_mixint_..., {', '.join(FITS)})")
    return coco_problem("bbob" if parts[1] == "bbob" else "bbob-mixint", f, d, i)


def select(spec, suite=None):
    """The problems of a comma-separated --problems list: external names and sets here, the
    rest from the C++ suite (`suite`: a suite_problems.Suite, loaded when needed), in order."""
    out, rest = [], []
    for item in (x for x in spec.split(",") if x):
        names = expand(item)
        if names:
            out += [make(n) for n in names]
        else:
            rest.append(item)
    if rest:
        if suite is None:
            import suite_problems
            suite = suite_problems.Suite()
        out += suite.select(",".join(rest))
    seen, unique = set(), []
    for p in out:
        if p.name not in seen:
            seen.add(p.name)
            unique.append(p)
    return unique


if __name__ == "__main__":
    # external_problems.py SPEC: the external problem names SPEC stands for, one a line.
    import sys
    for item in (x for x in (sys.argv[1] if len(sys.argv) > 1 else "external").split(",") if x):
        names = expand(item)
        if not names:
            raise SystemExit(f"external_problems.py: {item!r} is not an external problem or set "
                             "(coco, coco-bbob, coco-mixint, fit, external, or a name)")
        print("\n".join(names))
