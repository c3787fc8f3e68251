#!/usr/bin/env bash
# Training throughput: `tessera train` against PyTorch on the CPU (Debian's
# python3-torch) with the same model, batch size and optimizer (Adam), both
# measured in this run, each at its fastest host thread count (1 or 2): the
# MLP (784-256-128-10) at batch 32 and 128 and the CNN of `tessera train
# --model cnn` at batch 64. Prints samples/s for both and the ratio per
# case, and a RESULT line per case (target: ratio >= 1.0).
#
# A shared machine has slow and fast spells that last about a minute, which
# is longer than one side's runs: measured one side after the other, a
# spell decides the ratio. So each case runs in rounds, and each round times
# Tessera and PyTorch at 1 and 2 threads one after the other; each of the
# four keeps its best run over the rounds.
# Usage: bench/train/run.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
tessera="$build/tools/tessera"
[ -x "$tessera" ] || { echo "run.sh: $tessera is missing; build the 'tessera' target first" >&2; exit 1; }
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
rounds=4

# Samples per second of one run of `tessera train --model $3` at batch $1 on
# $2 host threads, $4 steps of runs of $5, from its host time per step (the
# executable comes from the cache that a first run filled, so compilation
# is not timed).
tessera_once() {
  local batch=$1 threads=$2 model=$3 steps=$4 spe=$5
  TESSERA_ENGINE_OPTIONS="{\"engine.hostThreads\":\"$threads\"}" \
    "$tessera" train --model "$model" --batch-size "$batch" --epochs 1 \
    --train-examples $(( batch * steps )) --test-examples 100 \
    --steps-per-execution "$spe" --cache "$cache" 2>/dev/null |
    awk -v b="$batch" '/^Host time per step:/ { printf "%.0f\n", b * 1000 / $5 }'
}

max() { echo $(( $1 > $2 ? $1 : $2 )); }

. bench/train/peer.sh
status=0
# model batch tessera-steps steps-per-execution torch-steps
for run in "mlp 32 400 100 600" "mlp 128 200 100 300" "cnn 64 40 20 60"; do
  read -r model batch steps spe torchSteps <<<"$run"
  tessera_once "$batch" 1 "$model" "$steps" "$spe" >/dev/null # fills the cache
  declare -A best=([t1]=0 [t2]=0 [p1]=0 [p2]=0)
  for round in $(seq "$rounds"); do
    for threads in 1 2; do
      rate=$(tessera_once "$batch" "$threads" "$model" "$steps" "$spe")
      best[t$threads]=$(max "${best[t$threads]}" "$rate")
    done
    for threads in 1 2; do
      torch_once "$batch" "$model" "$torchSteps" "$threads"
      best[p$threads]=$(max "${best[p$threads]}" "$TORCH_RATE")
    done
  done
  echo "tessera $model batch $batch: ${best[t1]} samples/s on 1 thread, ${best[t2]} on 2"
  echo "torch $model batch $batch: ${best[p1]} samples/s on 1 thread, ${best[p2]} on 2"
  ours=$(max "${best[t1]}" "${best[t2]}") peer=$(max "${best[p1]}" "${best[p2]}")
  ratio_at_least "$ours" "$peer" 1.0
  [ "$VERDICT" = OK ] || status=1
  echo "RESULT train_${model}_batch$batch tessera=${ours}/s torch=${peer}/s ratio=$RATIO target>=1.0 $VERDICT"
  unset best
done
exit $status
