#!/usr/bin/env bash
# Runs the graph-building benchmarks (bench/run_benches.sh).
# Usage: run_all.sh [BENCH_DIR] [extra Google Benchmark flags...]
#   BENCH_DIR: the folder holding bench_tensor_views (default:
#   build/bench/graph under the source tree).
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../build/bench/graph}"
shift || true
exec "$here/../run_benches.sh" "$dir" bench_tensor_views -- "$@"
