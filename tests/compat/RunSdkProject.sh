#!/usr/bin/env bash
# The acceptance test of the SDK-shaped install: installs the build into a
# fresh prefix, copies tests/sdk (a Poplar-style project with its own
# Makefile) into a scratch folder, and builds and runs it with plain `make`
# after `source <prefix>/enable.sh`, as a Poplar user would.
# Usage: RunSdkProject.sh <build dir> <source dir> <scratch dir>
set -euo pipefail
build="$1" source="$2" scratch="$3"
rm -rf "$scratch"
mkdir -p "$scratch"
# Absolute paths: the project is built from inside the scratch folder.
build="$(cd "$build" && pwd)" source="$(cd "$source" && pwd)"
scratch="$(cd "$scratch" && pwd)"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cp -r "$source/tests/sdk" "$scratch/project"
cd "$scratch/project"
# A clean shell environment: only what enable.sh sets up.
env -i HOME="$HOME" PATH=/usr/bin:/bin TESSERA_CACHE_DIR="$scratch/cache" \
  bash -c 'source "$1/enable.sh" && make run' \
  _ "$scratch/prefix"
