#!/usr/bin/env bash
# Tensor inspection's host cost (bench_inspection.cpp says what is
# measured): a RESULT line for the host time per step with the outfeed
# layers, gradient outfeed and callbacks against without them.
# Usage: run_all.sh [BENCH_DIR]  (default: build/bench)
# Exits 1 if the benchmark fails or misses its target.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(cd "${1:-$here/../../build/bench}" && pwd)" || exit 1
exe="$dir/inspection/bench_inspection"
[ -x "$exe" ] || { echo "run_all.sh: $exe is missing; build the 'bench_inspection' target first" >&2; exit 1; }
"$exe"
