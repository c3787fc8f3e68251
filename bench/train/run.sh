#!/usr/bin/env bash
# Training throughput: `tessera train` against PyTorch on the CPU (Debian's
# python3-torch) with the same model, batch size and optimizer (Adam), both
# measured in this run, each at its fastest host thread count (1 or 2) and
# the best of three timed runs (a busy moment on a shared machine should not
# decide either side): the MLP (784-256-128-10) at batch 32 and 128 and the
# CNN of `tessera train --model cnn` at batch 64. Prints samples/s for both
# and the ratio per case, and a RESULT line per case (target: ratio >= 1.0).
# Usage: bench/train/run.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
tessera="$build/tools/tessera"
[ -x "$tessera" ] || { echo "run.sh: $tessera is missing; build the 'tessera' target first" >&2; exit 1; }
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT

# Samples per second of `tessera train --model $3` at batch $1 on $2 host
# threads, $4 steps of runs of $5: from the best host time per step of three
# runs, after a first run that fills the executable cache (so compilation is
# not timed).
tessera_rate() {
  local batch=$1 threads=$2 model=$3 steps=$4 spe=$5
  local args=(train --model "$model" --batch-size "$batch" --epochs 1
              --train-examples $(( batch * steps )) --test-examples 100
              --steps-per-execution "$spe" --cache "$cache")
  TESSERA_ENGINE_OPTIONS="{\"engine.hostThreads\":\"$threads\"}" \
    "$tessera" "${args[@]}" >/dev/null 2>&1
  for run in 1 2 3; do
    TESSERA_ENGINE_OPTIONS="{\"engine.hostThreads\":\"$threads\"}" \
      "$tessera" "${args[@]}" 2>/dev/null |
      awk -v b="$batch" '/^Host time per step:/ { printf "%.0f\n", b * 1000 / $5 }'
  done | sort -n | tail -1
}

. bench/train/peer.sh
status=0
# model batch tessera-steps steps-per-execution torch-steps
for run in "mlp 32 400 100 600" "mlp 128 200 100 300" "cnn 64 40 20 60"; do
  read -r model batch steps spe torchSteps <<<"$run"
  best=0 bestThreads=0
  for threads in 1 2; do
    rate=$(tessera_rate "$batch" "$threads" "$model" "$steps" "$spe")
    echo "tessera $model batch $batch, $threads thread(s): $rate samples/s"
    if [ "$rate" -gt "$best" ]; then best=$rate bestThreads=$threads; fi
  done
  torch_rate "$batch" "$model" "$torchSteps"
  ratio_at_least "$best" "$TORCH_RATE" 1.0
  [ "$VERDICT" = OK ] || status=1
  echo "RESULT train_${model}_batch$batch tessera=${best}/s (threads $bestThreads) torch=${TORCH_RATE}/s ratio=$RATIO target>=1.0 $VERDICT"
done
exit $status
