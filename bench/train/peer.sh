# Sourced by the training benchmarks (bench/train/run.sh, bench/python/
# torch.sh): the PyTorch peer's figure and the RESULT verdict, so both
# measure the peer the same way.

# torch_once BATCH MODEL STEPS THREADS: sets TORCH_RATE to the peer's
# samples/s on THREADS threads (the best of its three timed runs), in a
# process of its own with OpenMP and OpenBLAS sized to match (both size
# their pools when they load).
torch_once() {
  TORCH_RATE=$(OMP_NUM_THREADS=$4 OPENBLAS_NUM_THREADS=$4 /usr/bin/python3 \
    bench/train/torch_peer.py --model "$2" --batch-size "$1" --steps "$3" \
    --threads "$4" | awk '{print $3}')
}

# torch_rate BATCH [MODEL [STEPS]]: prints the peer's line (samples/s of the
# same model, mlp by default, and Adam at its faster of 1 and 2 threads) and
# sets TORCH_RATE to that rate.
torch_rate() {
  local batch=$1 model=${2:-mlp} best=0 bestThreads=0 threads
  local steps=${3:-$((batch >= 128 ? 300 : 600))}
  for threads in 1 2; do
    torch_once "$batch" "$model" "$steps" "$threads"
    if awk -v a="$TORCH_RATE" -v b="$best" 'BEGIN { exit !(a > b) }'; then
      best=$TORCH_RATE bestThreads=$threads
    fi
  done
  echo "torch samples/s: $best (threads $bestThreads, batch $batch, steps $steps)"
  TORCH_RATE=$best
}

# ratio_at_least A B TARGET: sets RATIO to A / B (2 decimals) and VERDICT to
# OK when RATIO >= TARGET, else MISS.
ratio_at_least() {
  RATIO=$(awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }')
  VERDICT=$(awk -v r="$RATIO" -v t="$3" 'BEGIN { print (r >= t ? "OK" : "MISS") }')
}
