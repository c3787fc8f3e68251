#!/usr/bin/env bash
# The cost of the Python front door: host time per step of the same MLP
# (784-256-128-10, Adam, batch 32 and 128, 100 steps per device run)
# trained through `import tessera` (bench/python/keras_mlp.py) and through
# `tessera train`, both measured in this run, each the best of three fits
# after one that compiles. Prints a RESULT line per batch size (target:
# Python / C++ <= 1.05: the binding adds nothing per step).
# Usage: bench/python/run.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
[[ "$build" = /* ]] || build="$PWD/$build"
tessera="$build/tools/tessera"
[ -x "$tessera" ] || { echo "run.sh: $tessera is missing; build the 'tessera' target first" >&2; exit 1; }
[ -f "$build/python/tessera/__init__.py" ] || { echo "run.sh: build the 'tessera-python' target first" >&2; exit 1; }
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"

status=0
for batch in 32 128; do
  steps=$(( batch >= 128 ? 200 : 400 ))
  args=(train --model mlp --batch-size "$batch" --epochs 1
        --train-examples $(( batch * steps )) --test-examples 100
        --steps-per-execution 100 --cache "$cache")
  "$tessera" "${args[@]}" >/dev/null 2>&1
  cpp=$(for run in 1 2 3; do
          "$tessera" "${args[@]}" 2>/dev/null |
            awk '/^Host time per step:/ { print $5 * ($6 == "us" ? 0.001 : 1) }'
        done | sort -g | head -1)
  pyout=$(/usr/bin/python3 bench/python/keras_mlp.py "$batch" "$steps" 100 "$cache" 2>/dev/null)
  echo "$pyout"
  py=$(awk '/^Host time per step:/ { print $5 }' <<<"$pyout")
  ratio=$(awk -v a="$py" -v b="$cpp" 'BEGIN { printf "%.3f", a / b }')
  verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.05 ? "OK" : "MISS") }')
  [ "$verdict" = OK ] || status=1
  echo "RESULT python_keras_mlp_batch$batch python=${py}ms tessera_train=${cpp}ms ratio=$ratio target<=1.05 $verdict"
done
exit $status
