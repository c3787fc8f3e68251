#!/usr/bin/env bash
# Keras fit() on NumPy arrays through `import tessera` against the PyTorch
# peer of bench/train (bench/train/torch_peer.py: the same MLP, 784-256-128-10,
# Adam, batch size, unshuffled Fashion-MNIST examples), both measured in this
# run, each at its fastest host thread count (1 or 2) and the best of three
# timed runs. Tessera's figure is the wall time of the whole fit() call
# (array conversion, Python, callbacks and device runs) per step. Prints a
# RESULT line per batch size (target: ratio >= 0.5, bench/train's target for
# `tessera train`, so the Python path is held to the C++ path's bar).
# Usage: bench/python/torch.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
[[ "$build" = /* ]] || build="$PWD/$build"
[ -f "$build/python/tessera/__init__.py" ] || { echo "torch.sh: $build/python/tessera is missing; build the 'tessera-python' target first" >&2; exit 1; }
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"

. bench/train/peer.sh
status=0
for batch in 32 128; do
  steps=$(( batch >= 128 ? 200 : 400 ))
  best=0 bestThreads=0
  for threads in 1 2; do
    rate=$(TESSERA_ENGINE_OPTIONS="{\"engine.hostThreads\":\"$threads\"}" \
             /usr/bin/python3 bench/python/keras_mlp.py "$batch" "$steps" 100 "$cache" 2>/dev/null |
           awk '/^fit\(\) samples\/s:/ { print $3 }')
    echo "tessera fit() batch $batch, $threads thread(s): $rate samples/s"
    if [ "$rate" -gt "$best" ]; then best=$rate bestThreads=$threads; fi
  done
  torch_rate "$batch"
  ratio_at_least "$best" "$TORCH_RATE" 0.5
  [ "$VERDICT" = OK ] || status=1
  echo "RESULT python_fit_mlp_batch$batch tessera_fit=${best}/s (threads $bestThreads) torch=${TORCH_RATE}/s ratio=$RATIO target>=0.5 $VERDICT"
done
exit $status
