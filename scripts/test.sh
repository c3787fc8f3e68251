#!/usr/bin/env bash
# Builds Tessera and runs every test, then runs the core tests again in an
# AddressSanitizer + UndefinedBehaviorSanitizer build, then every fuzz
# harness for a few seconds (scripts/fuzz.sh). Installs missing Debian
# packages first. Usage: scripts/test.sh   (set JOBS to limit parallelism)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs="${JOBS:-$(nproc)}"
export CCACHE_BASEDIR="$PWD"
export TESSERA_CACHE_DIR="${TESSERA_CACHE_DIR:-$PWD/build/cache}"

echo "== Release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_BENCH=ON >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build -j "$jobs" --output-on-failure

echo "== Python tests (Debian's /usr/bin/python3: it has NumPy)"
PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}" \
  /usr/bin/python3 -m pytest -q tests/python

echo "== ASan + UBSan build and core tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_SANITIZE=ON -DTESSERA_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j "$jobs" --target tessera_support_tests \
  tessera_device_tests tessera_graph_tests tessera_compiler_tests \
  tessera_engine_tests tessera_data_tests tessera_session_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -j "$jobs" -L core --output-on-failure

echo "== Fuzz harnesses (clang, libFuzzer + ASan + UBSan), 2000 executions each"
scripts/fuzz.sh --runs 2000
