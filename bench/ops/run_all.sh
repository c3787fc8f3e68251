#!/usr/bin/env bash
# Runs the ops benchmarks (bench/run_benches.sh).
# Usage: run_all.sh [BENCH_DIR] [extra Google Benchmark flags...]
#   BENCH_DIR: the folder holding the bench_* binaries (default:
#   build/bench/ops under the source tree).
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../build/bench/ops}"
shift || true
exec "$here/../run_benches.sh" "$dir" bench_matmul bench_conv \
  bench_elementwise -- "$@"
