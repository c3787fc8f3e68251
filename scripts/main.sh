#!/usr/bin/env bash
# The main job: builds Tessera and runs the examples on the IPU Model (the
# default simulated IPU), ending with logistic regression on Fashion-MNIST
# from Debian's dataset-fashion-mnist. Installs missing Debian packages first.
# Usage: scripts/main.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs="${JOBS:-$(nproc)}"
export CCACHE_BASEDIR="$PWD"   # a second checkout reuses the ccache entries
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
echo "== examples/poplibs: popops on views, a matMul and its profile"
build/examples/poplibs_popops_add
build/examples/poplibs_matmul_profile
echo "== examples/poplibs/mnist_logistic: logistic regression on Fashion-MNIST (IPU Model, 4 tiles)"
build/examples/poplibs_mnist_logistic
echo "== examples/tensorflow: the TensorFlow-for-IPU tutorials' graphs, compile cache, sharding, feeds"
for example in basic xla_compile sharding training_loop outfeed_thread; do
  echo "-- tf_$example"
  "build/examples/tf_$example"
done
echo "== examples/keras/pipelining_inspection: the tensor-inspection tutorial's four models on Fashion-MNIST, outfeeding activations and gradients"
build/examples/keras_pipelining_inspection --steps 32 --epochs 2
echo "== the SDK-shaped install at build/install (source build/install/enable.sh to use it)"
cmake --build build -j "$jobs" --target tessera-sdk tessera
cmake --install build --prefix build/install >/dev/null
echo "== tests/sdk: a Poplar-style project built with its own Makefile (-std=c++11, popc)"
tests/compat/RunSdkProject.sh build . build/sdk-project
echo "== the tessera Python package, registered for Debian's /usr/bin/python3"
cmake --build build -j "$jobs" --target tessera-python
scripts/register-python.sh build
echo "== examples/python/keras_cnn.py: the workshop's Keras CNN on Fashion-MNIST, through import tessera"
/usr/bin/python3 examples/python/keras_cnn.py
echo "== tessera train: the main job, a Keras-style MLP (784-256-128-10) trained on Fashion-MNIST (IPU Model: ipu2, 1 IPU of 1472 tiles)"
cmake --build build -j "$jobs" --target tessera
build/tools/tessera train
