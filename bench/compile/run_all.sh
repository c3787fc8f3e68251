#!/usr/bin/env bash
# Host cost of compiling training steps (bench_compile_models.cpp says what is
# measured): RESULT lines for the compile time of ResNet-50 (32x32 and
# 224x224, batch 2, float32 and mixed float16), the workshop's CIFAR-10 CNN
# and `tessera train`'s CNN (batch 64) and the MLP, and ResNet-50's peak
# RSS, each compiled in its own child process; and the time to load each
# saved executable in a fresh process (RESULT load_*).
# Usage: run_all.sh [BENCH_DIR]  (default: build/bench)
# Exits 1 if the benchmark fails or misses a target.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(cd "${1:-$here/../../build/bench}" && pwd)" || exit 1
exe="$dir/compile/bench_compile_models"
[ -x "$exe" ] || { echo "run_all.sh: $exe is missing; build the 'bench_compile_models' target first" >&2; exit 1; }
"$exe"
