#!/usr/bin/env bash
# The main job: builds Tessera and runs the Poplar-style examples on the IPU
# Model (the default simulated IPU). Installs missing Debian packages first.
# Usage: scripts/main.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs="${JOBS:-$(nproc)}"
export TESSERA_CACHE_DIR="${TESSERA_CACHE_DIR:-$PWD/build/cache}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs" --target tessera-examples
for example in variables codelets matvec multi_ipu; do
  echo "== examples/poplar/$example"
  "build/examples/poplar_$example"
done
echo "== examples/poplar/executable (save, then load in a new process)"
build/examples/poplar_executable save build/example.tsx
build/examples/poplar_executable load build/example.tsx
