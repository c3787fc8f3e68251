#!/usr/bin/env bash
# Static analysis of src/: clang-tidy with the checks in .clang-tidy, and
# cppcheck. Needs a configured build/ (for compile_commands.json).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/compile_commands.json ] || cmake -S . -B build -G Ninja >/dev/null
sources=$(find src -name '*.cpp' | sort)
echo "== clang-tidy"
printf '%s\n' $sources | xargs -P "$(nproc)" -n 4 clang-tidy -p build --quiet --extra-arg=-Wno-unknown-warning-option
echo "== cppcheck"
cppcheck --quiet --error-exitcode=1 --std=c++20 --language=c++ \
  --enable=warning,performance,portability --inline-suppr \
  --suppress=missingIncludeSystem \
  --suppress=duplInheritedMember:include/tessera/Vertex.hpp \
  -I include -I src src
echo "lint clean"
