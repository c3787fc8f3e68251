#!/usr/bin/env bash
# Pipelined training against the same model on one IPU (bench_pipeline.cpp
# says what is measured): RESULT lines for the estimated throughput at
# N = 4, 16, 64 and the host time per micro-batch.
# Usage: run_all.sh [BENCH_DIR]  (default: build/bench)
# Exits 1 if the benchmark fails or misses a target.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(cd "${1:-$here/../../build/bench}" && pwd)" || exit 1
exe="$dir/pipeline/bench_pipeline"
[ -x "$exe" ] || { echo "run_all.sh: $exe is missing; build the 'bench_pipeline' target first" >&2; exit 1; }
"$exe"
