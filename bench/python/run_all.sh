#!/usr/bin/env bash
# Runs the Python front door's benchmarks: run.sh (host time per step
# through Python against `tessera train`) and torch.sh (fit() on NumPy
# against PyTorch), then prints their RESULT lines with the machine's load,
# as bench/run_benches.sh does for the C++ benchmarks.
# Usage: run_all.sh [BENCH_DIR]
#   BENCH_DIR: the build's bench folder (default: build/bench under the
#   source tree); the build is its parent, holding tools/tessera and python/.
# Exits 1 if a benchmark fails or a target is missed (a MISS line).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(cd "${1:-$here/../../build/bench}" && pwd)" || exit 1
build="$(dirname "$dir")"

status=0
summary=""
for b in run.sh torch.sh; do
  echo "=== bench/python/$b"
  out="$("$here/$b" "$build" 2>&1)"
  rc=$?
  echo "$out"
  if [[ $rc -ne 0 ]] && ! grep -q ' MISS' <<<"$out"; then
    echo "run_all.sh: bench/python/$b exited with status $rc" >&2
  fi
  [[ $rc -eq 0 ]] || status=1
  summary+="$(grep '^RESULT ' <<<"$out")"$'\n'
done

loadavg="$(cut -d" " -f1-3 /proc/loadavg)"
echo "=== summary ($(nproc) cores, load average $loadavg)"
printf '%s' "$summary"
exit $status
