#!/usr/bin/env bash
# What profiling costs: `tessera train` (the MLP, one epoch of N examples,
# executable cached) timed whole, launch to exit, without and with
# --profile (autoReport.all, the profile written at the end). Runs each
# three times, alternating, and compares the medians. Prints a RESULT line
# (target: at most 10% extra host time).
# Usage: bench/tools/profile_overhead.sh [build-dir] [train-examples]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
examples="${2:-16000}"
tessera="$build/tools/tessera"
[ -x "$tessera" ] || { echo "profile_overhead.sh: $tessera is missing; build the 'tessera' target first" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
args=(train --model mlp --epochs 1 --train-examples "$examples" --test-examples 1000
      --steps-per-execution 100 --cache "$work/cache")

seconds() { # runs the command, prints its wall time in seconds
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", b - a }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Fill the executable cache for both (the profile option is not part of
# the executable, so one compile serves both).
"$tessera" "${args[@]}" >/dev/null 2>&1
plain=() profiled=()
for i in 1 2 3; do
  plain+=("$(seconds "$tessera" "${args[@]}")")
  rm -rf "$work/prof"
  profiled+=("$(seconds "$tessera" "${args[@]}" --profile "$work/prof")")
done
[ -s "$work/prof/profile.json" ] || { echo "profile_overhead.sh: no profile was written" >&2; exit 1; }
p=$(printf '%s\n' "${plain[@]}" | median)
q=$(printf '%s\n' "${profiled[@]}" | median)
size=$(du -m "$work/prof/profile.json" | cut -f1)
echo "tessera train, $examples examples: ${plain[*]} s plain; ${profiled[*]} s with --profile (profile.json ${size} MB)"
ratio=$(awk -v a="$p" -v b="$q" 'BEGIN { printf "%.3f", b / a }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.10 ? "OK" : "MISS") }')
echo "RESULT profile_overhead plain=${p}s profiled=${q}s ratio=$ratio target<=1.10 $verdict"
[ "$verdict" = OK ]
