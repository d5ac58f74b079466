#!/usr/bin/env python3
"""Ray Tune's peer of dispatch_throughput --runner sleep (bench/dispatch/dispatch_throughput.cc).

TRIALS trials, at most CONCURRENCY at once (ray.init(num_cpus=CONCURRENCY), one CPU per trial),
each a function trainable that sleeps SLEEP_MS and returns loss = x^2 + y^2 (random search over
x, y uniform in [-10, 10], Tune's default BasicVariantGenerator).

    ray_sleep.py WORK_DIR TRIALS CONCURRENCY SLEEP_MS

Prints one JSON line: `seconds`, the wall time of Tuner.fit() (ray.init and the imports are not
counted), the ideal makespan (TRIALS x SLEEP_MS / CONCURRENCY, at least SLEEP_MS) and the
overhead over it, and first_start_to_last_end_s: from the first trial's sleep starting to the
last one's ending, as the trials saw it (Ray's worker start-up before the first trial excluded).
Tune's automatic result loggers (CSV, JSON, TensorBoard files per trial) are turned off, and
actors are reused between trials, to give Ray its best case.
"""
import json
import os
import sys
import time

os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import ray  # noqa: E402
from ray import tune  # noqa: E402


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: ray_sleep.py WORK_DIR TRIALS CONCURRENCY SLEEP_MS")
    work = os.path.abspath(sys.argv[1])
    trials, concurrency, sleep_ms = (int(a) for a in sys.argv[2:])
    sleep_s = sleep_ms / 1000.0

    def trainable(config):
        started = time.time()
        time.sleep(sleep_s)
        return {"loss": config["x"] ** 2 + config["y"] ** 2, "started": started,
                "ended": time.time()}

    ray.init(num_cpus=concurrency, include_dashboard=False, log_to_driver=False,
             configure_logging=True, logging_level="ERROR")
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}),
        param_space={"x": tune.uniform(-10.0, 10.0), "y": tune.uniform(-10.0, 10.0)},
        tune_config=tune.TuneConfig(num_samples=trials, max_concurrent_trials=concurrency,
                                    metric="loss", mode="min", reuse_actors=True),
        run_config=tune.RunConfig(name="dispatch", storage_path=os.path.join(work, "ray"),
                                  verbose=0),
    )
    start = time.perf_counter()
    results = tuner.fit()
    seconds = time.perf_counter() - start
    metrics = [r.metrics for r in results if r.error is None and r.metrics
               and "loss" in r.metrics]
    done = len(metrics)
    ideal = max(sleep_s, trials * sleep_s / concurrency)
    print(json.dumps({
        "impl": "ray", "version": ray.__version__, "runner": "sleep", "trials": trials,
        "complete": done, "errors": len(results.errors), "concurrency": concurrency,
        "sleep_ms": sleep_ms, "seconds": seconds, "ideal_s": ideal,
        "overhead_pct": 100.0 * (seconds / ideal - 1.0),
        "first_start_to_last_end_s": (max(m["ended"] for m in metrics) -
                                      min(m["started"] for m in metrics)) if done else None,
    }))
    ray.shutdown()
    return 0 if done == trials else 1


if __name__ == "__main__":
    sys.exit(main())
