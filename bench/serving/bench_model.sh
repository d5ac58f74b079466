# Sourced by the serving benchmarks. bench_model TUNER WORK LOG: trains the benchmarks' model
# (serving_sweep.json beside this file: an MLP of the demo's kind, a few seconds) in WORK/sweep,
# exports it to the registry WORK/registry as serving-mlp@champion, and prints that reference.
# Returns non-zero, its output in LOG, when either step fails.
bench_model() {
  local tuner=$1 work=$2 log=$3 here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  mkdir -p "$work/sweep"
  cp "$here/serving_sweep.json" "$work/sweep/"
  "$tuner" sweep "$work/sweep/serving_sweep.json" --executors 1 > "$log" 2>&1 || return 1
  "$tuner" export --study serving_bench --storage "$work/sweep/serving_bench.db" --trial 0 \
    --registry "$work/registry" --name serving-mlp --alias champion >> "$log" 2>&1 || return 1
  echo "$work/registry/serving-mlp@champion"
}
