"""The Python half of run_serving_bench: the request body, the answer check, the JSON lines and
the table. Runs in the benchmark's MLflow venv (numpy and PyYAML come with mlflow).

  serving_bench.py resolve REF                        the model version directory REF names
  serving_bench.py payload MODEL_DIR DATA_DIR ROWS OUT  the request body of ROWS test images
  serving_bench.py check ROWS TUNER_ANSWER MLFLOW_ANSWER  same predictions? (a JSON line)
  serving_bench.py header KEY=VALUE...                the results' first line
  serving_bench.py run KEY=VALUE... WRK_JSON          one (server, concurrency) line
  serving_bench.py table RESULTS.jsonl                the comparison table
"""

import datetime
import gzip
import json
import os
import platform
import struct
import sys

import numpy as np
import yaml

# The target, at every concurrency: this many times MLflow's requests per second, at a
# lower p99 latency.
TARGET_RATIO = 10.0
# Answers agree when every value is within this fraction of its row's largest magnitude: a
# relative tolerance that does not fail on logits near zero, whose own relative error is large
# when the two runtimes sum in different orders.
REL_TOL = 1e-4


def fail(message):
    print(f"serving_bench.py: {message}", file=sys.stderr)
    sys.exit(1)


def resolve(ref):
    """A version directory, DIR/MODEL/VERSION, DIR/MODEL@ALIAS or DIR/MODEL (its champion, else
    its latest version), as tuner's registry resolves them (docs/registry.md)."""
    if os.path.isfile(os.path.join(ref, "MLmodel")):
        return os.path.abspath(ref)
    alias = None
    if "@" in os.path.basename(ref):
        ref, alias = ref.rsplit("@", 1)
    model_dir = os.path.abspath(ref)
    registry_json = os.path.join(model_dir, "registry.json")
    if not os.path.isfile(registry_json):
        fail(f"--model {ref}: neither a model directory (no MLmodel) nor a registered model "
             f"(no {registry_json})")
    with open(registry_json) as f:
        model = json.load(f)
    aliases = model.get("aliases", {})
    if alias is not None:
        if alias not in aliases:
            fail(f"--model {ref}@{alias}: no alias '{alias}' (has: {', '.join(aliases) or 'none'})")
        version = aliases[alias]
    elif "champion" in aliases:
        version = aliases["champion"]
    else:
        versions = [v["version"] for v in model.get("versions", [])]
        if not versions:
            fail(f"--model {ref}: the model has no versions")
        version = max(versions)
    version_dir = os.path.join(model_dir, str(version))
    if not os.path.isfile(os.path.join(version_dir, "MLmodel")):
        fail(f"--model: {version_dir} has no MLmodel")
    return version_dir


def read_idx_images(path, count):
    with gzip.open(path, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 2051:
            fail(f"{path}: not an IDX image file (magic {magic})")
        count = min(count, n)
        pixels = np.frombuffer(f.read(count * rows * cols), dtype=np.uint8)
    return pixels.reshape(count, rows * cols)


def input_spec(model_dir):
    """(dtype, shape) of the model's one tensor input, from its MLmodel signature."""
    with open(os.path.join(model_dir, "MLmodel")) as f:
        mlmodel = yaml.safe_load(f)
    inputs = json.loads(mlmodel.get("signature", {}).get("inputs") or "[]")
    if len(inputs) != 1 or inputs[0].get("type") != "tensor":
        fail(f"{model_dir}/MLmodel: expected a signature of one tensor input, got {inputs}")
    spec = inputs[0]["tensor-spec"]
    return np.dtype(spec["dtype"]), list(spec["shape"]), mlmodel.get("metadata", {})


def payload(model_dir, data_dir, rows, out):
    dtype, shape, metadata = input_spec(model_dir)
    sample_shape = [d for d in shape[1:]]
    if any(d < 0 for d in sample_shape):
        fail(f"{model_dir}: the input's shape {shape} has a free dimension past the batch")
    numel = int(np.prod(sample_shape))
    if numel == 28 * 28:
        # Fashion-MNIST test images, as their file holds them: the models tuner exports take the
        # raw pixels and preprocess inside the graph (docs/registry.md, "Preprocessing").
        pixels = read_idx_images(os.path.join(data_dir, "t10k-images-idx3-ubyte.gz"), rows)
        if len(pixels) < rows:
            fail(f"--rows {rows}: the test set has {len(pixels)} images")
        pre = metadata.get("preprocessing", {})
        if np.issubdtype(dtype, np.floating) and not pre.get("in_model_onnx", False):
            # A version 1 export takes normalized float inputs.
            norm = pre.get("normalize", {"mean": 0.0, "stddev": 1.0})
            values = (pixels / 255.0 - norm["mean"]) / norm["stddev"]
        else:
            values = pixels
        source = "fashion-mnist t10k images 0..%d" % (rows - 1)
    else:
        # Not an image of 28x28: fixed pseudo-random values, the same in every run.
        rng = np.random.default_rng(20)
        if np.issubdtype(dtype, np.integer):
            values = rng.integers(0, 256 if dtype == np.uint8 else 100, size=(rows, numel))
        else:
            values = rng.uniform(-1.0, 1.0, size=(rows, numel))
        source = "seeded pseudo-random values"
    # MLflow checks the tensor's rank against the signature, so the body nests each sample in
    # the signature's shape ([N, 1, 28, 28], not [N, 784]); tuner takes both.
    batch = np.asarray(values).astype(dtype).reshape([rows] + sample_shape)
    body = json.dumps({"inputs": batch.tolist()}, separators=(",", ":"))
    with open(out, "w") as f:
        f.write(body)
    print(f"payload: {rows} x {sample_shape} {dtype} ({source}), {len(body)} bytes")


def prediction_rows(answer_path, rows):
    """The numbers of an answer of MLflow's scoring protocol as [rows, outputs]: for tensor
    inputs {"predictions": {"<output>": [[...]]}} (or a bare list), for data frames a record
    per row."""
    with open(answer_path) as f:
        text = f.read()
    try:
        answer = json.loads(text)
    except json.JSONDecodeError:
        fail(f"{answer_path}: not JSON: {text[:300]!r}")
    if not isinstance(answer, dict) or "predictions" not in answer:
        fail(f"{answer_path}: no 'predictions' in {text[:300]!r}")
    p = answer["predictions"]
    if isinstance(p, dict):
        if len(p) != 1:
            fail(f"{answer_path}: {len(p)} outputs, expected 1: {list(p)}")
        (name, values), = p.items()
    elif isinstance(p, list) and p and isinstance(p[0], dict):
        name = next(iter(p[0]))
        values = [r[name] for r in p]
    else:
        name, values = None, p
    try:
        array = np.asarray(values, dtype=np.float64).reshape(rows, -1)
    except ValueError as e:
        fail(f"{answer_path}: predictions are not {rows} rows of numbers ({e})")
    return name, array


def check(rows, tuner_path, mlflow_path):
    t_name, t = prediction_rows(tuner_path, rows)
    m_name, m = prediction_rows(mlflow_path, rows)
    line = {"kind": "check", "rows": rows, "tuner_output": t_name, "mlflow_output": m_name}
    if t.shape != m.shape:
        line.update(ok=False, reason=f"shapes differ: tuner {list(t.shape)}, mlflow {list(m.shape)}")
    else:
        scale = np.maximum(np.abs(m).max(axis=1, keepdims=True), 1e-30)
        rel = float((np.abs(t - m) / scale).max())
        same_class = bool((t.argmax(axis=1) == m.argmax(axis=1)).all())
        line.update(ok=rel <= REL_TOL and t_name == m_name, max_rel_diff=rel,
                    same_classes=same_class, classes=t.argmax(axis=1).tolist())
        if t_name != m_name:
            line["reason"] = f"output names differ: tuner {t_name!r}, mlflow {m_name!r}"
        elif rel > REL_TOL:
            line["reason"] = f"values differ by up to {rel:.3g} of the row's scale (> {REL_TOL})"
    print(json.dumps(line))
    return 0 if line["ok"] else 1


def cpu_facts():
    model, flags = "unknown", set()
    with open("/proc/cpuinfo") as f:
        for entry in f:
            key, _, value = entry.partition(":")
            key = key.strip()
            if key == "model name" and model == "unknown":
                model = value.strip()
            elif key == "flags" and not flags:
                flags = set(value.split())
    isa = "avx512f" if "avx512f" in flags else "avx2" if "avx2" in flags else "sse"
    return model, isa


def cpu_slug():
    model, _ = cpu_facts()
    words = "".join(c.lower() if c.isalnum() else " " for c in model.replace("(R)", "").replace("(TM)", ""))
    return "-".join(w for w in words.split() if w not in ("cpu", "processor")) or "cpu"


def key_values(args):
    out = {}
    for a in args:
        key, sep, value = a.partition("=")
        if not sep:
            fail(f"expected KEY=VALUE, got {a!r}")
        out[key] = int(value) if value.lstrip("-").isdigit() else value
    return out


def header(args):
    model, isa = cpu_facts()
    with open("/proc/loadavg") as f:
        load = [float(x) for x in f.read().split()[:3]]
    line = {"kind": "header", "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "cpu": model, "isa": isa, "cores": os.cpu_count(), "loadavg_at_start": load,
            "host": platform.node()}
    line.update(key_values(args))
    print(json.dumps(line))


def run_line(args):
    kv = key_values(args[:-1])
    with open(args[-1]) as f:
        w = json.load(f)
    seconds = w["duration_us"] / 1e6
    errors = sum(w["errors"].values())
    lat = w["latency_us"]
    line = {"kind": "run", "server": kv.pop("server"), "concurrency": kv.pop("concurrency"),
            "rps": round(w["requests"] / seconds, 1),
            "samples_per_s": round(w["requests"] * kv["rows"] / seconds, 1),
            "p50_ms": lat["p50"] / 1e3, "p90_ms": lat["p90"] / 1e3, "p99_ms": lat["p99"] / 1e3,
            "max_ms": lat["max"] / 1e3, "requests": w["requests"], "seconds": round(seconds, 3),
            "errors": errors, "non_2xx": w["errors"]["status"],
            "socket_errors": {k: v for k, v in w["errors"].items() if k != "status"}}
    line.update(kv)
    print(json.dumps(line))


def table(path):
    header_line, check_line, shutdown, runs = {}, None, None, {}
    with open(path) as f:
        for text in f:
            line = json.loads(text)
            if line["kind"] == "header":
                header_line = line
            elif line["kind"] == "check":
                check_line = line
            elif line["kind"] == "run":
                runs[(line["server"], line["concurrency"])] = line
            elif line["kind"] == "shutdown":
                shutdown = line["tuner_exit_status_after_sigterm"]
    h = header_line
    print(f"{h.get('cpu')} ({h.get('isa')}, {h.get('cores')} cores), load at start "
          f"{h.get('loadavg_at_start')}; mlflow {h.get('mlflow_version')} with "
          f"{h.get('mlflow_workers')} worker(s), onnxruntime {h.get('onnxruntime_version')}")
    print(f"model {h.get('model')}: {h.get('rows')} sample(s) per request, {h.get('seconds')} s "
          f"per run, wrk closed loop (each connection sends its next request when answered)")
    if check_line is not None:
        verdict = "same predictions" if check_line["ok"] else "DIFFERENT PREDICTIONS: " + check_line.get("reason", "")
        print(f"answer check: {verdict} (max difference {check_line.get('max_rel_diff', 'n/a')} of the row's scale)")
    print()
    cols = ["concurrency", "tuner rps", "mlflow rps", "ratio", "tuner p50/p99 ms",
            "mlflow p50/p99 ms", "target met?"]
    rows_out = []
    all_met = True
    for c in sorted({c for (_, c) in runs}):
        t, m = runs.get(("tuner", c)), runs.get(("mlflow", c))

        def lat(r):
            return "-" if r is None else f"{r['p50_ms']:.2f} / {r['p99_ms']:.2f}"

        def rps(r):
            if r is None:
                return "-"
            return f"{r['rps']:.0f}" + (f" ({r['errors']} errors)" if r["errors"] else "")

        if t is None or m is None or m["rps"] == 0:
            ratio, met = "-", "no (missing run)"
        else:
            ratio_value = t["rps"] / m["rps"]
            ratio = f"{ratio_value:.1f}x"
            if t["errors"] or m["errors"]:
                met = "no (errors)"
            elif ratio_value >= TARGET_RATIO and t["p99_ms"] < m["p99_ms"]:
                met = "yes"
            else:
                why = []
                if ratio_value < TARGET_RATIO:
                    why.append(f"< {TARGET_RATIO:.0f}x")
                if t["p99_ms"] >= m["p99_ms"]:
                    why.append("p99 not lower")
                met = "no (" + ", ".join(why) + ")"
        all_met = all_met and met == "yes"
        rows_out.append([str(c), rps(t), rps(m), ratio, lat(t), lat(m), met])
    widths = [max(len(cols[i]), *(len(r[i]) for r in rows_out)) for i in range(len(cols))]
    print(" | ".join(cols[i].ljust(widths[i]) for i in range(len(cols))))
    print("-+-".join("-" * w for w in widths))
    for r in rows_out:
        print(" | ".join(r[i].ljust(widths[i]) for i in range(len(cols))))
    print()
    if shutdown is not None:
        print(f"tuner serve-model exited {shutdown} after SIGTERM" + ("" if shutdown == 0 else " (expected 0)"))
    print(f"target ({TARGET_RATIO:.0f}x MLflow's requests/s at a lower p99, every concurrency, no errors): "
          + ("met" if all_met and rows_out else "NOT met"))


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "resolve" and len(args) == 1:
        print(resolve(args[0]))
    elif cmd == "payload" and len(args) == 4:
        payload(args[0], args[1], int(args[2]), args[3])
    elif cmd == "check" and len(args) == 3:
        return check(int(args[0]), args[1], args[2])
    elif cmd == "cpu-slug" and not args:
        print(cpu_slug())
    elif cmd == "header":
        header(args)
    elif cmd == "run" and args:
        run_line(args)
    elif cmd == "table" and len(args) == 1:
        table(args[0])
    else:
        fail(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
