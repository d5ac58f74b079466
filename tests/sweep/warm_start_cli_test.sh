#!/usr/bin/env bash
# Warm start end to end (docs/samplers.md, "Warm start"): a sweep seeded by an earlier study that
# tuner wrote models from its first trial (TPE's proposals, not random start-up ones), keeps its
# own trials apart (numbered from 0, none copied), and does so again when resumed from the stored
# study alone; a missing study or file is refused, naming it and the studies that exist; without a
# storage it reads the database the sweep runs on.
#   warm_start_cli_test.sh TUNER_BINARY WORK_DIR
set -uo pipefail
tuner="$1"; work="$2/warm-start-$$"
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat > "$work/objective.py" <<'PY'
import json, sys
x, y = float(sys.argv[1]), float(sys.argv[2])
print(json.dumps({"loss": (x - 1.5) ** 2 + (y + 2.0) ** 2}), flush=True)
PY

# sweep_file NAME TRIALS SEED EXTRA > file
sweep_file() {
  cat <<JSON
{"version": 1, "name": "$1",
 "space": {"params": {"x": {"type": "float", "low": -10.0, "high": 10.0},
                      "y": {"type": "float", "low": -10.0, "high": 10.0}}},
 "objective": {"metric": "loss", "direction": "minimize"},
 "sampler": {"type": "tpe", "seed": $3},
 "budget": {"trials": $2},
 "job": {"kind": "command", "argv": ["python3", "$work/objective.py", "{x}", "{y}"]},
 "executors": {"local": 2}$4}
JSON
}

# samplers DB STUDY: the sampler each trial came from, in trial order, one a line.
samplers() {
  "$tuner" trials --storage "$1" --study "$2" --json |
    python3 -c 'import json, sys
for line in sys.stdin: print(json.loads(line).get("sampler", "-"))'
}

sweep_file slice_a 12 1 ', "storage": "a.db"' > "$work/a.json"
out=$("$tuner" sweep "$work/a.json" 2>&1) || fail "the first sweep exited $?: $out"

# A cold start: TPE's first 10 trials are random.
sweep_file cold 2 2 '' > "$work/cold.json"
out=$("$tuner" sweep "$work/cold.json" 2>&1) || fail "the cold sweep exited $?: $out"
[ "$(samplers "$work/cold.db" cold | sort -u)" = random ] ||
  fail "a cold start's first trials: $(samplers "$work/cold.db" cold)"

# Warm: every trial is TPE's from the first one on, and only the sweep's own trials are stored.
sweep_file slice_b 3 2 ', "warm_start": {"study": "slice_a", "storage": "a.db"}' > "$work/b.json"
out=$("$tuner" sweep "$work/b.json" 2>&1) || fail "the warm sweep exited $?: $out"
grep -q "warm start: 12 observations from study 'slice_a' in $work/a.db" <<<"$out" ||
  fail "no warm-start line in: $out"
[ "$(samplers "$work/slice_b.db" slice_b | tr '\n' ' ')" = "tpe tpe tpe " ] ||
  fail "warm-started trials: $(samplers "$work/slice_b.db" slice_b | tr '\n' ' ')"
numbers=$("$tuner" trials --storage "$work/slice_b.db" --study slice_b --json |
  python3 -c 'import json, sys; print(" ".join(str(json.loads(l)["number"]) for l in sys.stdin))')
[ "$numbers" = "0 1 2" ] || fail "the warm-started study's trials are $numbers"

# Resumed from the study alone (no sweep file): the same source is read again.
out=$("$tuner" resume --study slice_b --storage "$work/slice_b.db" --trials 5 2>&1) ||
  fail "resume exited $?: $out"
grep -q "warm start: 12 observations from study 'slice_a'" <<<"$out" ||
  fail "no warm-start line on resume: $out"
[ "$(samplers "$work/slice_b.db" slice_b | tr '\n' ' ')" = "tpe tpe tpe tpe tpe " ] ||
  fail "after resume: $(samplers "$work/slice_b.db" slice_b | tr '\n' ' ')"

# A study that is not there, a file that is not there.
sweep_file slice_c 2 3 ', "warm_start": {"study": "nope", "storage": "a.db"}' > "$work/c.json"
out=$("$tuner" sweep "$work/c.json" 2>&1); rc=$?
[ $rc != 0 ] || fail "a missing study was accepted: $out"
grep -q "no study named 'nope' in $work/a.db (it has: slice_a)" <<<"$out" ||
  fail "the missing study's error: $out"
sweep_file slice_d 2 3 ', "warm_start": {"study": "slice_a", "storage": "missing.db"}' \
  > "$work/d.json"
out=$("$tuner" sweep "$work/d.json" 2>&1); rc=$?
[ $rc != 0 ] || fail "a missing file was accepted: $out"
grep -q "no study database at $work/missing.db" <<<"$out" || fail "the missing file's error: $out"
[ ! -e "$work/missing.db" ] || fail "the missing file was created"

# A warm_start without storage reads the database the sweep runs on: --storage's, not the sweep
# file's own (scripts/demo runs examples/sweeps/fashion_mnist_mlp_warm.json so, in DEMO_DIR).
sweep_file slice_e 2 3 ', "storage": "elsewhere/e.db", "warm_start": {"study": "slice_a"}' \
  > "$work/e.json"
out=$("$tuner" sweep "$work/e.json" --storage "$work/a.db" 2>&1) ||
  fail "the warm sweep on --storage exited $?: $out"
grep -q "warm start: 12 observations from study 'slice_a'$" <<<"$out" ||
  fail "no warm-start line from the --storage database in: $out"
[ "$(samplers "$work/a.db" slice_e | tr '\n' ' ')" = "tpe tpe " ] ||
  fail "warm-started trials on --storage: $(samplers "$work/a.db" slice_e | tr '\n' ' ')"
[ ! -e "$work/elsewhere" ] || fail "the sweep file's own storage was used despite --storage"
echo PASS
