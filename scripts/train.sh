#!/usr/bin/env bash
# Installs dependencies and Fashion-MNIST (Debian's dataset-fashion-mnist), builds
# pe-actor-run, and trains the default MLP on this machine, then reports test accuracy.
# Extra arguments go to pe-actor-run (e.g. --epochs 3 --optimizer adam --lr 0.001).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --with-data
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j2 --target pe-actor-run
exec build/apps/pe-actor-run --data idx:/usr/share/datasets/fashion-mnist --normalize \
  --epochs 1 --eval --metrics build/train-metrics.json "$@"
