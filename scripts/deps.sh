#!/usr/bin/env bash
# Installs the Debian packages Tessera builds, tests and runs with. Idempotent:
# does nothing when everything is already there.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev
  libopenblas-dev libzstd-dev libxxhash-dev zlib1g-dev
  dataset-fashion-mnist
  chromium python3-torch python3-torchvision python3-protobuf
  clang libclang-rt-14-dev llvm
  pybind11-dev python3-dev python3-numpy python3-pytest
  libonnx-dev python3-onnx openmpi-bin libopenmpi-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing missing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${missing[@]}"
fi
