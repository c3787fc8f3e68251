#!/usr/bin/env bash
# Runs the four engine benchmarks and prints their RESULT lines at the end.
# Usage: run_all.sh [BENCH_DIR] [extra Google Benchmark flags...]
#   BENCH_DIR: the folder holding the bench_* binaries (default:
#   build/bench/engine under the source tree). Codelets are cached under
#   $TESSERA_CACHE_DIR (default: BENCH_DIR/bench-cache).
# Exits 1 if a benchmark fails or a target is missed (a MISS line).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../build/bench/engine}"
# Absolute, so the cache path stays valid for the benchmarks' codelet builds.
dir="$(cd "$dir" && pwd)"
shift || true
export TESSERA_CACHE_DIR="${TESSERA_CACHE_DIR:-$dir/bench-cache}"
mkdir -p "$TESSERA_CACHE_DIR"

status=0
summary=""
for b in bench_compute bench_exchange bench_compile bench_memory; do
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
