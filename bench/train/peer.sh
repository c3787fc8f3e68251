# Sourced by the training benchmarks (bench/train/run.sh, bench/python/
# torch.sh): the PyTorch peer's figure and the RESULT verdict, so both
# measure the peer the same way.

# torch_rate BATCH [MODEL [STEPS]]: prints the peer's line (samples/s of the
# same model, mlp by default, and Adam at its faster of 1 and 2 threads) and
# sets TORCH_RATE to that rate.
torch_rate() {
  local batch=$1 model=${2:-mlp} line
  local steps=${3:-$((batch >= 128 ? 300 : 600))}
  line=$(/usr/bin/python3 bench/train/torch_peer.py --model "$model" \
    --batch-size "$batch" --steps "$steps" --threads 1,2)
  echo "$line"
  TORCH_RATE=$(echo "$line" | awk '{print $3}')
}

# torch_once BATCH MODEL STEPS THREADS: sets TORCH_RATE to the peer's
# samples/s on THREADS threads (the best of its three timed runs), with
# OpenMP and OpenBLAS sized to match, as torch_peer.py does for its children.
torch_once() {
  TORCH_RATE=$(OMP_NUM_THREADS=$4 OPENBLAS_NUM_THREADS=$4 /usr/bin/python3 \
    bench/train/torch_peer.py --model "$2" --batch-size "$1" --steps "$3" \
    --threads "$4" | awk '{print $3}')
}

# ratio_at_least A B TARGET: sets RATIO to A / B (2 decimals) and VERDICT to
# OK when RATIO >= TARGET, else MISS.
ratio_at_least() {
  RATIO=$(awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }')
  VERDICT=$(awk -v r="$RATIO" -v t="$3" 'BEGIN { print (r >= t ? "OK" : "MISS") }')
}
