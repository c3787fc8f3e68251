#!/usr/bin/env bash
# Runs the engine benchmarks (bench/run_benches.sh).
# Usage: run_all.sh [BENCH_DIR] [extra Google Benchmark flags...]
#   BENCH_DIR: the folder holding the bench_* binaries (default:
#   build/bench/engine under the source tree).
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../build/bench/engine}"
shift || true
exec "$here/../run_benches.sh" "$dir" bench_compute bench_exchange \
  bench_compile bench_memory bench_steps bench_train_step -- "$@"
