#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) with clang, ASan and UBSan in
# build-fuzz/, writes their seed corpus, and runs every harness over it.
# Usage: scripts/fuzz.sh SECONDS     each harness for SECONDS seconds
#        scripts/fuzz.sh --runs N    each harness for N executions
# FUZZ_JOBS (default 1) harnesses run side by side; FUZZ_HARNESSES="idx csv"
# runs only those; JOBS limits the build's parallelism. Prints one line per
# harness and exits non-zero when any crashed, leaked, hit undefined
# behaviour or timed out; the input that did it is in build-fuzz/artifacts/
# (rerun it: build-fuzz/fuzz/tessera_fuzz_NAME FILE), the log in
# build-fuzz/fuzz-logs/NAME.log. New inputs that reach new code are kept in
# build-fuzz/fuzz-corpus/NAME and used by later runs; inputs committed to
# fuzz/regressions/NAME/ run every time.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/fuzz.sh SECONDS | scripts/fuzz.sh --runs N" >&2
  exit 2
}
limit=()
case "${1:-}" in
--runs)
  [[ "${2:-}" =~ ^[0-9]+$ ]] || usage
  # The time cap only guards a CI job against a harness gone slow.
  limit=(-runs="$2" -max_total_time=300)
  ;;
*)
  [[ "${1:-}" =~ ^[0-9]+$ ]] || usage
  limit=(-max_total_time="$1")
  ;;
esac

scripts/deps.sh
export CCACHE_BASEDIR="$PWD"
build=build-fuzz
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
  -DTESSERA_FUZZ=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF \
  >/dev/null
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target tessera-fuzz

all=(idx csv csv_gzip checkpoint checkpoint_checked executable engine_load
  ir_text codelet report onnx)
read -r -a harnesses <<<"${FUZZ_HARNESSES:-${all[*]}}"
mkdir -p "$build/artifacts" "$build/fuzz-logs"
rm -rf "$build/fuzz-logs"/*
# The harnesses write each input to a scratch file: in memory (/dev/shm)
# where there is one: a disk folder cuts the checkpoint harness's executions
# per second from about 3000 to 300.
scratch=$(mktemp -d /dev/shm/tessera-fuzz.XXXXXX 2>/dev/null ||
  mktemp -d "$PWD/$build/fuzz-tmp.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# Runs one harness; its summary goes to fuzz-logs/NAME.summary.
fuzz_one() {
  local name=$1 bin="$build/fuzz/tessera_fuzz_$1" log="$build/fuzz-logs/$1.log"
  mkdir -p "$build/fuzz-corpus/$name"
  # fuzz/regressions/NAME: inputs that once crashed, run every time.
  local corpora=("$build/fuzz-corpus/$name" "$build/corpus/$name")
  [ ! -d "fuzz/regressions/$name" ] || corpora+=("fuzz/regressions/$name")
  local rc=0
  TMPDIR="$scratch" \
    ASAN_OPTIONS=detect_leaks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin" "${limit[@]}" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$name-" \
    "${corpora[@]}" >"$log" 2>&1 || rc=$?
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" |
    tail -n 1 | grep -o '[0-9]*$' || true)
  [ -n "$execs" ] ||
    execs=$(grep -o '^#[0-9]*' "$log" | tail -n 1 | tr -d '#' || true)
  local artifact
  artifact=$(grep -o 'Test unit written to [^ ]*' "$log" | tail -n 1 |
    sed 's/Test unit written to //' || true)
  if [ "$rc" -eq 0 ] && [ -z "$artifact" ]; then
    echo "fuzz $name: ${execs:-0} execs, no crash"
  else
    # What happened (the sanitizer's summary, a violated property, an
    # uncaught exception) and the first frame in Tessera's own code.
    local what frame
    what=$(grep -m 1 -E '^SUMMARY: |property violated|terminate called|^==[0-9]+== ?ERROR: libFuzzer' "$log" |
      sed -E 's/ \(\/[^)]*\)//g; s/ \(BuildId: [0-9a-f]*\)//g' | cut -c1-200 || true)
    frame=$(grep -m 1 -E '^ +#[0-9]+ 0x[0-9a-f]+ in .* [^ ]*/(src|tools)/' "$log" |
      sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ in //; s/\(anonymous namespace\):://g; s/\([^()]*\)//g; s#[^ ]*/((src|tools)/)#\1#' || true)
    echo "fuzz $name: FAILED after ${execs:-?} execs: ${artifact:-no input saved}"
    echo "    ${what:-see the log}"
    [ -z "$frame" ] || echo "    at $frame"
    echo "    log: $log"
  fi >"$build/fuzz-logs/$name.summary"
}

jobs=${FUZZ_JOBS:-1}
for name in "${harnesses[@]}"; do
  [ -x "$build/fuzz/tessera_fuzz_$name" ] || {
    echo "fuzz.sh: no harness \"$name\"; harnesses: ${all[*]}" >&2
    exit 2
  }
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz_one "$name" &
done
wait

failed=0
for name in "${harnesses[@]}"; do
  cat "$build/fuzz-logs/$name.summary"
  grep -q 'no crash$' "$build/fuzz-logs/$name.summary" || failed=1
done
exit "$failed"
