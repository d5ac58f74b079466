#!/usr/bin/env bash
# A sweep whose executors Ray starts ("executors": {"ray": ...}), on a one-node Ray cluster brought
# up here on loopback (ray start --head, its own ports and temp dir, a Ray Client server), with
# Ray from PyPI (ray[client]) in a virtual environment in the build tree (made once, reused while
# it imports ray and grpc). Checks that every trial completes on executors that Ray's actors run,
# through a Ray Client address (ray://) and the head's own, that `tuner status` lists the
# executors' actors while they run, that no executor is left afterwards (also after Ctrl-C), that
# an executor killed mid-trial is replaced and its trial run again, and that an executor asking
# for GPUs that the cluster lacks is listed pending as infeasible and stops the sweep quickly with
# what it asked for and what the cluster has.
#   ray_test.sh TUNER_BINARY WORK_DIR VENV_DIR    (KEEP_RAY_TEST=1: print the outputs, keep the folder)
set -uo pipefail
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 0; }
mkdir -p "$2"
tuner=$(realpath "$1"); work="$(realpath "$2")/ray-$$"; venv=$(realpath -m "$3")
# Ray, with what Ray Client needs (grpc), in the virtual environment: installed once, then reused.
has_ray() { "$venv/bin/python" -c "import ray, grpc" 2>/dev/null; }
if ! has_ray; then
  exec 9>"$venv.lock"; flock 9
  if ! has_ray; then
    if [ ! -x "$venv/bin/pip" ]; then
      rm -rf "$venv"
      python3 -m venv "$venv" >"$2/ray-venv.log" 2>&1 ||
        { echo "SKIP: python3 -m venv failed (Debian: apt-get install python3-venv):"; tail -n 5 "$2/ray-venv.log"; exit 0; }
    fi
    if ! "$venv/bin/pip" install --disable-pip-version-check -q "ray[client]" >"$2/ray-pip.log" 2>&1; then
      echo "SKIP: pip install ray[client] failed (no PyPI from this host?):"; tail -n 15 "$2/ray-pip.log"
      rm -rf "$venv"
      exit 0
    fi
  fi
  flock -u 9
fi
python="$venv/bin/python"

rm -rf "$work"; mkdir -p "$work"
# Ray's sockets live in its temp dir, whose path must stay short (a socket path has at most 107
# bytes, and Ray Client's server for each driver makes longer names than the head's): in /tmp.
ray_tmp=$(mktemp -d /tmp/tuner-ray.XXXXXX)
ray_pid=
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  # ray start --block stops every process of its node when it is told to stop.
  if [ -n "$ray_pid" ]; then
    kill "$ray_pid" 2>/dev/null
    for _ in $(seq 1 150); do kill -0 "$ray_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$ray_pid" 2>/dev/null
  fi
  # Any process still using this test's Ray temp dir (a worker that outlived its raylet).
  for p in $(pgrep -f -- "$ray_tmp/"); do kill -9 "$p" 2>/dev/null; done
  [ -n "${KEEP_RAY_TEST:-}" ] || rm -rf "$work" "$ray_tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- ray start"; tail -n 20 "$work/ray.out" 2>/dev/null
  echo "--- raylet"; tail -n 20 "$ray_tmp"/session_latest/logs/raylet.out 2>/dev/null
  echo "--- Ray Client server"; tail -n 10 "$ray_tmp"/session_latest/logs/ray_client_server*.err 2>/dev/null
  exit 1
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Ray on loopback: its nodes' address 127.0.0.1, not this host's other addresses.
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
export RAY_USAGE_STATS_ENABLED=0
port=$(free_port)
client_port=$(free_port)
"$venv/bin/ray" start --head --block --port="$port" --node-ip-address=127.0.0.1 --num-cpus=2 \
  --num-gpus=0 --include-dashboard=false --disable-usage-stats --temp-dir="$ray_tmp" \
  --dashboard-agent-listen-port="$(free_port)" --ray-client-server-port="$client_port" \
  >"$work/ray.out" 2>&1 &
ray_pid=$!
ready=
for _ in $(seq 1 120); do
  kill -0 "$ray_pid" 2>/dev/null || fail "ray start exited: $(cat "$work/ray.out")"
  if timeout 30 "$python" -c "import ray, sys; ray.init(address='127.0.0.1:$port', logging_level='ERROR');
sys.exit(0 if ray.cluster_resources().get('CPU') == 2 else 1)" >/dev/null 2>&1; then
    ready=1; break
  fi
  sleep 0.5
done
[ -n "$ready" ] || fail "the Ray head on 127.0.0.1:$port did not come up in 60 s"

cat >"$work/trial.py" <<'PY'
import json, sys, time
x = float(sys.argv[1])
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.5)
print(json.dumps({"loss": (x - 1) ** 2}), flush=True)
PY
make_sweep() {  # NAME ENDPOINT_PORT EXTRA_RAY_MEMBERS [TRIAL_SECONDS]   (address: $address or the head's)
  cat >"$work/$1.json" <<JSON
{
  "name": "$1",
  "space": {"params": {"x": {"type": "float", "low": -2.0, "high": 2.0}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "sampler": {"type": "random", "seed": 1},
  "budget": {"trials": 4},
  "job": {"kind": "command", "argv": ["python3", "$work/trial.py", "{x}", "${4:-0.5}"]},
  "executors": {"ray": {"address": "${address:-127.0.0.1:$port}", "python": "$python", "tuner": "${node_tuner:-$tuner}",
                        "endpoint": "tcp://127.0.0.1:$2", "max_executors": 2,
                        "cpus_per_executor": 1 $3}}
}
JSON
}
# The executors of this test's sweep on ENDPOINT_PORT, by their command line.
executors_of() { pgrep -f -- "executor --connect tcp://127.0.0.1:$1 "; }
no_executor_left() {  # ENDPOINT_PORT WHEN
  for _ in $(seq 1 100); do [ -z "$(executors_of "$1")" ] && return; sleep 0.1; done
  fail "tuner executor still runs 10 s after $2: $(pgrep -af -- "executor --connect tcp://127.0.0.1:$1 ")"
}

# `tuner status` of STUDY in DB until it has a line matching REGEX (up to SECONDS); that line.
status_line() {  # DB STUDY REGEX SECONDS
  local line
  for _ in $(seq 1 $(($4 * 5))); do
    line=$("$tuner" status --storage "$1" --study "$2" 2>/dev/null | grep -E -- "$3") &&
      { echo "$line"; return 0; }
    sleep 0.2
  done
  return 1
}

# Four trials on at most two executors that Ray starts, through Ray Client (a ray:// address).
ok_port=$(free_port)
address="ray://127.0.0.1:$client_port" make_sweep ok "$ok_port" ""
out=$(timeout 120 "$tuner" sweep "$work/ok.json" 2>&1); rc=$?
[ -n "${KEEP_RAY_TEST:-}" ] && echo "$out"
[ $rc = 0 ] || fail "the sweep exited $rc: $out"
grep -q "sweep 'ok': 4/4 done (4 complete" <<<"$out" || fail "not all trials complete: $out"
trials=$("$tuner" trials --storage "$work/ok.db" --study ok --state complete --csv 2>&1) ||
  fail "tuner trials: $trials"
[ "$(tail -n +2 <<<"$trials" | wc -l)" = 4 ] || fail "not 4 COMPLETE trials: $trials"
grep -q "ray: connected to the cluster at ray://127.0.0.1:$client_port" <<<"$out" ||
  fail "no ray.init through Ray Client: $out"
started=$(grep -c "ray: executor ray-[a-z0-9]*-[0-9]* started on [0-9.]*" <<<"$out")
[ "$started" -ge 1 ] && [ "$started" -le 2 ] || fail "$started executors started for at most 2: $out"
grep -q "ray: stopped executor" <<<"$out" || fail "the sweep did not stop its executors: $out"
no_executor_left "$ok_port" "the sweep ended"

# Ctrl-C twice (stop the running trials now) while trials run on Ray's executors: the sweep stops
# them on its way out.
stopped_port=$(free_port)
make_sweep stopped "$stopped_port" "" 60
"$tuner" sweep "$work/stopped.json" >"$work/stopped.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
for _ in $(seq 1 600); do
  [ "$("$tuner" trials --storage "$work/stopped.db" --study stopped --state running --csv 2>/dev/null |
       tail -n +2 | wc -l)" -ge 1 ] && break
  sleep 0.1
done
[ -n "$(executors_of "$stopped_port")" ] || fail "no executor runs a trial: $(cat "$work/stopped.out")"
# tuner status lists the executors' actors: named by their ids, alive, on a node, Ray's actor id.
alive='ray-[a-z0-9]{6}-[0-9]+ alive on [0-9.]+ \(actor [0-9a-f]{16,}\)'
line=$(status_line "$work/stopped.db" stopped "^  ray executors \(ray-[a-z0-9]{6} on 127\.0\.0\.1:$port\): .*$alive" 30) ||
  fail "tuner status does not list the alive executors: $("$tuner" status --storage "$work/stopped.db" 2>&1)"
grep -q "executors connect to tcp://127.0.0.1:$stopped_port" <<<"$line" || fail "tuner status: $line"
[ -n "${KEEP_RAY_TEST:-}" ] && echo "status: $line"
kill -INT $sweep_pid; sleep 0.5; kill -INT $sweep_pid
for _ in $(seq 1 300); do kill -0 $sweep_pid 2>/dev/null || break; sleep 0.1; done
kill -0 $sweep_pid 2>/dev/null && fail "the sweep still runs 30 s after Ctrl-C twice"
wait $sweep_pid; rc=$?
out=$(cat "$work/stopped.out")
[ -n "${KEEP_RAY_TEST:-}" ] && echo "$out"
[ $rc = 130 ] || fail "the stopped sweep exited $rc, not 130: $out"
grep -q "ray: stopped executor" <<<"$out" || fail "the stopped sweep did not stop its executors: $out"
no_executor_left "$stopped_port" "Ctrl-C"
"$tuner" status --storage "$work/stopped.db" | grep -q "ray executors" &&
  fail "tuner status lists Ray executors of a sweep that ended"

# An executor killed mid-trial (as when its node is lost), after it connected: the sweep goes on,
# the trial's lease expires and it runs again, and the launcher starts another executor.
killed_port=$(free_port)
make_sweep killed "$killed_port" "" 3
"$tuner" sweep "$work/killed.json" >"$work/killed.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
for _ in $(seq 1 600); do
  [ "$("$tuner" trials --storage "$work/killed.db" --study killed --state running --csv 2>/dev/null |
       tail -n +2 | wc -l)" -ge 1 ] && [ -n "$(executors_of "$killed_port")" ] && break
  sleep 0.1
done
victim=$(executors_of "$killed_port" | head -n 1)
[ -n "$victim" ] || fail "no executor runs a trial: $(cat "$work/killed.out")"
kill -9 "$victim"
for _ in $(seq 1 1200); do kill -0 $sweep_pid 2>/dev/null || break; sleep 0.1; done
kill -0 $sweep_pid 2>/dev/null && fail "the sweep still runs 120 s after its executor was killed"
wait $sweep_pid; rc=$?
out=$(cat "$work/killed.out")
[ -n "${KEEP_RAY_TEST:-}" ] && echo "$out"
[ $rc = 0 ] || fail "the sweep whose executor was killed exited $rc: $out"
grep -q "sweep 'killed': 4/4 done (4 complete" <<<"$out" || fail "not all trials complete: $out"
grep -q "ray: executor ray-[a-z0-9]*-[0-9]* ended: tuner executor was killed by signal 9" <<<"$out" &&
  grep -q "a new one is started when trials wait" <<<"$out" ||
  fail "the killed executor's end is not said: $out"
grep -q "lease [0-9]* (trial [0-9]*, attempt 0, executor ray-[a-z0-9]*-[0-9]*) expired" <<<"$out" ||
  fail "the killed executor's lease did not expire: $out"
no_executor_left "$killed_port" "the sweep ended"

# tuner serve starts a submitted study's executors on Ray and stops them when it is done.
"$tuner" keygen --out "$work/coordinator" >/dev/null || fail "keygen"
mkdir -p "$work/executor-keys"
"$tuner" keygen --out "$work/executor-keys/box" >/dev/null || fail "keygen"
serve_port=$(free_port)
"$tuner" serve --storage "$work/serve.db" --endpoint "tcp://0.0.0.0:$serve_port" \
  --key "$work/coordinator.key" --executor-keys "$work/executor-keys" >"$work/serve.out" 2>&1 &
serve_pid=$!; pids+=($serve_pid)
for _ in $(seq 1 100); do grep -qs "listening on" "$work/serve.out" && break; sleep 0.05; done
make_sweep served "$serve_port" ""
out=$(timeout 120 "$tuner" sweep "$work/served.json" --storage "$work/serve.db" --submit 2>&1); rc=$?
[ $rc = 0 ] || fail "the submitted sweep exited $rc: $out; serve: $(cat "$work/serve.out")"
grep -q "sweep 'served': 4/4 done (4 complete" <<<"$out" || fail "submitted: $out"
grep -q "serve: study 'served': ray: executor ray-[a-z0-9]*-[0-9]* started" "$work/serve.out" ||
  fail "the serve started no executor on Ray: $(cat "$work/serve.out")"
no_executor_left "$serve_port" "the served study ended"
kill -INT $serve_pid; wait $serve_pid
[ -n "${KEEP_RAY_TEST:-}" ] && cat "$work/serve.out"

# More GPUs than the cluster has: tuner status lists the executor pending as infeasible, with
# what it asks for and what the cluster has, and the sweep stops soon, saying the same.
gpu_port=$(free_port)
make_sweep gpu "$gpu_port" ', "gpus_per_executor": 2'
timeout 90 "$tuner" sweep "$work/gpu.json" >"$work/gpu.out" 2>&1 &
sweep_pid=$!; pids+=($sweep_pid)
line=$(status_line "$work/gpu.db" gpu "ray-[a-z0-9]{6}-[0-9]+ pending \(infeasible: it asks for CPU 1, GPU 2, and no live node of the cluster has that much \(the cluster has CPU 2, GPU 0" 30) ||
  fail "tuner status does not list the unplaceable executor as infeasible: $("$tuner" status --storage "$work/gpu.db" 2>&1); the sweep: $(cat "$work/gpu.out")"
[ -n "${KEEP_RAY_TEST:-}" ] && echo "status: $line"
wait $sweep_pid; rc=$?
out=$(cat "$work/gpu.out")
[ -n "${KEEP_RAY_TEST:-}" ] && echo "$out"
[ $rc != 0 ] && [ $rc != 124 ] || fail "a sweep asking for GPUs the cluster lacks exited $rc: $out"
grep -q "executors.ray: Ray cannot place the executor ray-[a-z0-9]*-[0-9]* of sweep 'gpu'" <<<"$out" &&
  grep -q "asks for CPU 1, GPU 2" <<<"$out" && grep -q "the cluster has CPU 2, GPU 0" <<<"$out" ||
  fail "no clear message for the missing GPUs: $out"
no_executor_left "$gpu_port" "the GPU sweep failed"

# An executor that cannot start on its node: the sweep stops at once, with the executor's output.
bad_port=$(free_port)
node_tuner=/nonexistent/tuner make_sweep badbin "$bad_port" ""
out=$(timeout 90 "$tuner" sweep "$work/badbin.json" 2>&1); rc=$?
[ -n "${KEEP_RAY_TEST:-}" ] && echo "$out"
[ $rc != 0 ] && [ $rc != 124 ] || fail "a sweep whose executors cannot start exited $rc: $out"
grep -q "executors.ray: the executor ray-[a-z0-9]*-[0-9]* of sweep 'badbin' ended" <<<"$out" &&
  grep -q "cannot run /nonexistent/tuner" <<<"$out" || fail "the failed executor is not explained: $out"

echo PASS
