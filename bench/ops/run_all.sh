#!/usr/bin/env bash
# Runs the ops benchmarks and prints their RESULT lines at the end.
# Usage: run_all.sh [BENCH_DIR] [extra Google Benchmark flags...]
#   BENCH_DIR: the folder holding the bench_* binaries (default:
#   build/bench/ops under the source tree).
# Exits 1 if a benchmark fails or a target is missed (a MISS line).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../build/bench/ops}"
shift || true
# Absolute, so that a relative cache folder still works from other folders.
dir="$(cd "$dir" && pwd)"
export TESSERA_CACHE_DIR="${TESSERA_CACHE_DIR:-$dir/bench-cache}"
mkdir -p "$TESSERA_CACHE_DIR"

status=0
summary=""
for b in bench_matmul bench_conv bench_elementwise; do
  exe="$dir/$b"
  if [[ ! -x "$exe" ]]; then
    echo "run_all.sh: $exe is missing; build it first (ninja $b)" >&2
    status=1
    continue
  fi
  echo "=== $b"
  out="$("$exe" "$@" 2>&1)"
  rc=$?
  echo "$out"
  if [[ $rc -ne 0 ]]; then
    echo "run_all.sh: $b exited with status $rc" >&2
    status=1
  fi
  summary+="$(grep '^RESULT ' <<<"$out")"$'\n'
done

loadavg="$(cut -d" " -f1-3 /proc/loadavg)"
echo "=== summary ($(nproc) cores, load average $loadavg)"
printf '%s' "$summary"
if grep -q ' MISS' <<<"$summary"; then
  status=1
fi
exit $status
