#!/usr/bin/env bash
# Host time per step of poptorch.trainingModel against plain PyTorch on the
# CPU for examples/poptorch/mnist.py's network (bench_training.py): batch 8
# and 32 on the example's 1216-tile IPU Model, and batch 8 on a 16-tile
# one (the simulated step's host time grows with the tiles). Prints a
# RESULT line for each: ratio = PyTorch / poptorch (target >= 0.5: the IPU
# Model's simulated step costs the host at most twice PyTorch's own step).
# Usage: bench/poptorch/run_all.sh [BENCH_DIR]   (the build's bench folder,
# as every run_all.sh takes; default: build/bench)
# Exits 1 if a benchmark fails or a target is missed (a MISS line).
set -uo pipefail
cd "$(dirname "$0")/../.."
bench="${1:-build/bench}"
[[ "$bench" = /* ]] || bench="$PWD/$bench"
build="$(dirname "$bench")"
[ -f "$build/python/poptorch/__init__.py" ] || { echo "run_all.sh: build the 'poptorch-python' target first" >&2; exit 1; }
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"

status=0
summary=""
for config in 8:1216 32:1216 8:16; do
  batch=${config%:*} tiles=${config#*:}
  out=$(/usr/bin/python3 bench/poptorch/bench_training.py "$batch" 50 200 "$tiles" 2>&1)
  rc=$?
  echo "$out"
  if [ $rc -ne 0 ]; then
    echo "run_all.sh: bench_training.py $batch 50 200 $tiles exited with status $rc" >&2
    status=1
    continue
  fi
  ipu=$(awk '/^poptorch.trainingModel:/ { print $2 }' <<<"$out")
  cpu=$(awk '/^PyTorch on the CPU:/ { print $5 }' <<<"$out")
  ratio=$(awk -v a="$cpu" -v b="$ipu" 'BEGIN { printf "%.3f", a / b }')
  verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.5 ? "OK" : "MISS") }')
  [ "$verdict" = OK ] || status=1
  summary+="RESULT poptorch_training_batch${batch}_tiles$tiles poptorch=${ipu}ms torch=${cpu}ms ratio=$ratio target>=0.5 $verdict"$'\n'
done
echo "=== summary ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%s' "$summary"
exit $status
