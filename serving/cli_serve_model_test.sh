#!/usr/bin/env bash
# tuner serve-model as a user meets it, on real data: two tiny models trained by tuner sweep and
# exported to a registry, the champion served; every payload form of MLflow's scoring protocol
# answered with tuner predict's classes; a bad payload; /ping, /version, /metrics; the champion
# moved to version 2 under load (no failed request, served within seconds); the request log read
# by tuner drift; SIGTERM (exit 0).
#   cli_serve_model_test.sh TUNER
set -euo pipefail
tuner=$1
here=$(cd "$(dirname "$0")" && pwd)
data=${TUNER_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$data/t10k-images-idx3-ubyte.gz" ]; then
  echo "skipped: install Debian's dataset-fashion-mnist"
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tuner_cli_serve_model.XXXXXX")
server=""
cleanup() {
  [ -n "$server" ] && kill -9 "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$work/server.out" ] && cat "$work/server.out" >&2; exit 1; }

cp "$here/../registry/testdata/tiny_sweep.json" "$work/"
"$tuner" sweep "$work/tiny_sweep.json" --executors 1 > "$work/sweep.out" 2>&1 ||
  { cat "$work/sweep.out"; fail "tuner sweep"; }
for trial in 0 1; do
  alias=()
  [ "$trial" = 0 ] && alias=(--alias champion)
  "$tuner" export --study tiny_sweep --storage "$work/tiny_sweep.db" --trial "$trial" \
    --registry "$work/registry" --name fmnist "${alias[@]}" > "$work/export.out" ||
    { cat "$work/export.out"; fail "tuner export of trial $trial"; }
done
"$tuner" predict --model "$work/registry/fmnist/1" --input "$data/t10k-images-idx3-ubyte.gz" \
  --limit 16 --output "$work/predicted1.csv" > /dev/null
"$tuner" predict --model "$work/registry/fmnist/2" --input "$data/t10k-images-idx3-ubyte.gz" \
  --limit 16 --output "$work/predicted2.csv" > /dev/null

"$tuner" serve-model --model "$work/registry/fmnist@champion" --port 0 --reload-seconds 0.2 \
  --max-wait-ms 2 --log-dir "$work/log" > "$work/server.out" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q "^serving " "$work/server.out" && break
  kill -0 "$server" 2>/dev/null || fail "tuner serve-model exited"
  sleep 0.1
done
grep -q "^serving fmnist version 1 " "$work/server.out" || fail "no 'serving fmnist version 1' line"
url=$(sed -n 's/^serving .* on \(http:[^ ,]*\).*/\1/p' "$work/server.out")

python3 - "$url" "$data/t10k-images-idx3-ubyte.gz" "$work" "$work/registry" "$tuner" <<'PY'
import csv, gzip, json, subprocess, sys, threading, time, urllib.error, urllib.request

url, images, work, registry, tuner = sys.argv[1:]
with gzip.open(images) as f:
    raw = f.read()
pixels = [list(raw[16 + i * 784:16 + (i + 1) * 784]) for i in range(16)]

def expected(version):
    with open(f"{work}/predicted{version}.csv") as f:
        return [int(row["predicted"]) for row in csv.DictReader(f)]

def call(path, body=None, ctype="application/json"):
    req = urllib.request.Request(url + path, data=body.encode() if body is not None else None,
                                 headers={"Content-Type": ctype} if body is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)

def classes(answer):
    p = json.loads(answer)["predictions"]
    rows = p["logits"] if isinstance(p, dict) else [r["logits"] for r in p]
    return [max(range(len(r)), key=r.__getitem__) for r in rows]

def check(name, status, body, want):
    assert status == 200, f"{name}: status {status}: {body}"
    got = classes(body)
    assert got == want, f"{name}: classes {got}, tuner predict's {want}"

want = expected(1)
nested = [[[row[r * 28:(r + 1) * 28] for r in range(28)]] for row in pixels]
columns = [f"pixel{i}" for i in range(784)]
forms = {
    "inputs": json.dumps({"inputs": nested}),
    "inputs (flat)": json.dumps({"inputs": pixels}),
    "instances": json.dumps({"instances": [{"input": x} for x in nested]}),
    "dataframe_split": json.dumps({"dataframe_split": {"columns": columns, "data": pixels}}),
    "dataframe_records": json.dumps({"dataframe_records": [dict(zip(columns, x)) for x in pixels]}),
}
for name, body in forms.items():
    check(name, *call("/invocations", body)[:2], want)
csv_body = ",".join(columns) + "\n" + "\n".join(",".join(map(str, x)) for x in pixels) + "\n"
check("csv", *call("/invocations", csv_body, "text/csv")[:2], want)

status, body, _ = call("/invocations", json.dumps({"inputs": [pixels[0][:100]]}))
assert status == 400, f"a 100-value sample: status {status}"
message = json.loads(body)["message"]
assert "inputs[0]" in message and "[1, 28, 28]" in message, f"the message: {message}"
status, body, _ = call("/invocations", json.dumps({"inputs": [[0.5] * 784]}))
assert status == 400 and "uint8" in body, f"a non-integer pixel: {status} {body}"
assert call("/ping")[0] == 200 and call("/health")[0] == 200
assert call("/version")[1].strip(), "an empty /version"

# The champion moves to version 2 while four clients keep asking.
stop, failures, versions = False, [], []
def client():
    body = json.dumps({"inputs": pixels[:4]})
    while not stop:
        status, answer, headers = call("/invocations", body)
        if status != 200:
            failures.append(f"{status}: {answer}")
            continue
        versions.append(headers.get("X-Tuner-Model-Version"))
threads = [threading.Thread(target=client) for _ in range(4)]
for t in threads:
    t.start()
time.sleep(0.5)
subprocess.run([tuner, "registry", "alias", "fmnist", "2", "champion", "--registry", registry],
               check=True, stdout=subprocess.DEVNULL)
deadline = time.time() + 10
while time.time() < deadline and (not versions or versions[-1] != "2"):
    time.sleep(0.05)
time.sleep(0.3)
stop = True
for t in threads:
    t.join()
assert not failures, f"{len(failures)} failed requests during the promotion, e.g. {failures[0]}"
assert versions and versions[-1] == "2", f"version 2 not served within 10 s (last: {versions[-1:]})"
assert "1" in versions, "no answer by version 1 before the move"
check("inputs after the move", *call("/invocations", forms["inputs"])[:2], expected(2))
metrics = call("/metrics")[1]
for line in ['tuner_serving_model_version{model="fmnist"} 2',
             'tuner_serving_model_reloads_total{result="loaded"} 1',
             'tuner_serving_requests_total{path="/invocations",status="400"} 2']:
    assert line in metrics, f"/metrics lacks {line}"
print(f"served {len(versions)} requests under load, the move to version 2 without a failure")
PY

grep -q "^now serving fmnist version 2 " "$work/server.out" || fail "no 'now serving fmnist version 2' line"
kill -TERM "$server"
status=0
wait "$server" || status=$?
server=""
[ "$status" = 0 ] || fail "tuner serve-model exited $status after SIGTERM, expected 0"
grep -q "^stopped" "$work/server.out" || fail "no 'stopped' line after SIGTERM"

# The request log, as tuner drift reads it: every answered request, both versions named.
ls "$work/log" | grep -q '^requests-[0-9]\{8\}T[0-9]\{6\}-[0-9]*\.jsonl$' || fail "no request log files"
drift_status=0
"$tuner" drift --reference "$data/t10k-images-idx3-ubyte.gz" --reference-limit 2000 \
  --current "$work/log" > "$work/drift.out" 2>&1 || drift_status=$?
[ "$drift_status" = 0 ] || [ "$drift_status" = 3 ] || { cat "$work/drift.out"; fail "tuner drift exited $drift_status"; }
grep -q "fmnist" "$work/drift.out" || { cat "$work/drift.out"; fail "tuner drift does not name the logged model"; }
echo "cli_serve_model: passed"
