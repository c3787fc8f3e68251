#!/usr/bin/env bash
# Fidelity against published IPU figures (bench_fidelity.cpp names each
# workload and its source): a table of estimates (device only and
# host-inclusive), published figures and ratios, and a RESULT line per
# workload, OK when the ratio lies in 0.67-1.5.
# Usage: run_all.sh [BENCH_DIR]  (default: build/bench)
# Exits 1 if the benchmark fails or a workload misses.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(cd "${1:-$here/../../build/bench}" && pwd)" || exit 1
exe="$dir/fidelity/bench_fidelity"
[ -x "$exe" ] || { echo "run_all.sh: $exe is missing; build the 'bench_fidelity' target first" >&2; exit 1; }
out="$("$exe")"
rc=$?
echo "$out"
[ $rc -eq 0 ] || exit $rc
! grep -q '^RESULT .* MISS$' <<<"$out"
