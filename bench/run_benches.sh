#!/usr/bin/env bash
# Runs benchmark binaries and prints their RESULT lines at the end, with the
# machine's load (the run_all.sh of each bench folder calls this).
# Usage: run_benches.sh BENCH_DIR BENCH... [-- extra Google Benchmark flags]
#   Codelets are cached under $TESSERA_CACHE_DIR (default:
#   BENCH_DIR/bench-cache).
# Exits 1 if a benchmark fails or a target is missed (a MISS line).
set -u
# Absolute, so the cache path stays valid for the benchmarks' codelet builds.
dir="$(cd "$1" && pwd)"
shift
benches=()
while [[ $# -gt 0 && "$1" != "--" ]]; do
  benches+=("$1")
  shift
done
shift || true
export TESSERA_CACHE_DIR="${TESSERA_CACHE_DIR:-$dir/bench-cache}"
mkdir -p "$TESSERA_CACHE_DIR"

status=0
summary=""
for b in "${benches[@]}"; do
  exe="$dir/$b"
  if [[ ! -x "$exe" ]]; then
    echo "run_benches.sh: $exe is missing; build it first (ninja $b)" >&2
    status=1
    continue
  fi
  echo "=== $b"
  out="$("$exe" "$@" 2>&1)"
  rc=$?
  echo "$out"
  if [[ $rc -ne 0 ]]; then
    echo "run_benches.sh: $b exited with status $rc" >&2
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
