#!/usr/bin/env bash
# Data-parallel training over MPI on this host: `tessera train` (the MLP,
# 784-256-128-10, Adam, batch 32 per replica) as 1 instance running 2
# replicas (one process, 2 host threads) against 2 instances of 1 replica
# each (`tessera poprun`, 1 host thread each), both measured in this run:
# samples/s from the host time per step (best of 3 runs after one that
# fills the executable cache), and for the 2 instances the host time per
# step spent in MPI (the cross-instance all-reduce of the MLP's 235,146
# gradients, 0.94 MB) and its share of the step. The MPI time is split
# (TESSERA_MPI_SPLIT_WAIT=1: a barrier before each collective) into the
# wait for the other instance to arrive, which is load imbalance any
# synchronous data parallelism has, and the transfer, the MPI overhead.
# RESULT lines: dist_samples_per_s (the 2-instance rate against the
# 1-instance rate, target ratio >= 0.5) and dist_mpi_fraction (the
# transfer, target < 10% of the step).
# Usage: run_all.sh [BENCH_DIR]
#   BENCH_DIR: the build's bench folder (default: build/bench); its parent
#   holds tools/tessera.
# Exits 1 if a run fails or a target is missed (a MISS line).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(cd "${1:-$here/../../build/bench}" && pwd)" || exit 1
tessera="$(dirname "$dir")/tools/tessera"
[ -x "$tessera" ] || { echo "run_all.sh: $tessera is missing; build the 'tessera' target first" >&2; exit 1; }
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
batch=32
steps=100
args=(train --model mlp --batch-size $batch --epochs 1
      --train-examples $(( batch * steps * 2 )) --test-examples 100
      --steps-per-execution 50 --cache "$cache")

# Seconds from a "<label>: <number> <unit>" line of `tessera train`.
seconds_of() {
  awk -v label="$1: " 'index($0, label) == 1 {
      split(substr($0, length(label) + 1), w, " ");
      s = w[1]; if (w[2] == "ms") s /= 1e3; else if (w[2] == "us") s /= 1e6;
      printf "%.9f\n", s; exit }'
}

# The seconds of "; <number> <unit> of it waiting" in the MPI line.
wait_of() {
  awk '/^MPI time per step:/ && match($0, /; [0-9.]+ [mu]?s of it waiting/) {
      split(substr($0, RSTART + 2, RLENGTH), w, " ");
      s = w[1]; if (w[2] == "ms") s /= 1e3; else if (w[2] == "us") s /= 1e6;
      printf "%.9f\n", s }'
}

# One run: prints "host_seconds_per_step mpi_seconds_per_step
# mpi_wait_seconds_per_step".
one_run() {
  local out
  out="$("$@" 2>/dev/null)" || { echo "run_all.sh: '$*' failed" >&2; return 1; }
  local host mpi wait
  host="$(seconds_of "Host time per step" <<<"$out")"
  mpi="$(seconds_of "MPI time per step" <<<"$out")"
  wait="$(wait_of <<<"$out")"
  echo "$host ${mpi:-0} ${wait:-0}"
}

# The best (fastest) of three runs after a warm-up; prints as one_run.
best_of_three() {
  "$@" >/dev/null 2>&1 || { echo "run_all.sh: '$*' failed" >&2; return 1; }
  for run in 1 2 3; do one_run "$@" || return 1; done | sort -g | head -1
}

status=0
single=$(TESSERA_ENGINE_OPTIONS='{"engine.hostThreads":"2"}' \
  best_of_three "$tessera" "${args[@]}" --replicas 2) || status=1
multi=$(TESSERA_MPI_SPLIT_WAIT=1 \
  TESSERA_ENGINE_OPTIONS='{"engine.hostThreads":"1"}' \
  best_of_three "$tessera" poprun --num-instances 2 --num-replicas 2 -- \
  "$tessera" "${args[@]}") || status=1
[ $status -eq 0 ] || exit 1
read -r singleHost _ <<<"$single"
read -r multiHost multiMpi multiWait <<<"$multi"
awk -v b=$batch -v s="$singleHost" -v m="$multiHost" -v all="$multiMpi" \
    -v wait="$multiWait" 'BEGIN {
  mpi = all - wait;
  rs = 2 * b / s; rm = 2 * b / m; ratio = rm / rs; frac = 100 * mpi / m;
  v1 = (ratio >= 0.5) ? "OK" : "MISS"; v2 = (frac < 10) ? "OK" : "MISS";
  printf "1 instance x 2 replicas: %.2f ms per step, %.0f samples/s\n", s * 1e3, rs;
  printf "2 instances x 1 replica: %.2f ms per step, %.0f samples/s, MPI %.3f ms per step: %.3f ms transfer (%.1f%%), %.3f ms waiting for the other instance\n", m * 1e3, rm, all * 1e3, mpi * 1e3, frac, wait * 1e3;
  printf "RESULT dist_samples_per_s two_instances=%.0f/s one_instance=%.0f/s ratio=%.2f target>=0.5 %s\n", rm, rs, ratio, v1;
  printf "RESULT dist_mpi_fraction mpi=%.3fms step=%.3fms fraction=%.1f%% target<10%% %s\n", mpi * 1e3, m * 1e3, frac, v2;
}' > "$cache/summary" || status=1
cat "$cache/summary"
[ "$(grep -c '^RESULT ' "$cache/summary")" -eq 2 ] || status=1
grep -q ' MISS$' "$cache/summary" && status=1
loadavg="$(cut -d" " -f1-3 /proc/loadavg)"
echo "=== ($(nproc) cores, load average $loadavg)"
exit $status
