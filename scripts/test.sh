#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the whole test suite (ctest), the Python
# package's pytest tests included (PE_PYTHON=ON: a missing pybind11 fails the build, it does
# not skip them); then installs the Python package as Python users do (pip, numpy 2 and
# Debian's numpy: scripts/test_python_package.sh); then builds the fuzz targets with clang,
# ASan and UBSan, replays their regression corpora and fuzzes each for PE_FUZZ_SECONDS
# (default 20; 0: replay only).
# Usage: scripts/test.sh [build-dir]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/install_deps.sh
# ccache keys on paths relative to this checkout, so the wheel's build (another folder)
# reuses this build's objects.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPE_PYTHON=ON
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure -j2
scripts/test_python_package.sh "$build"
FUZZ_JOBS=2 scripts/fuzz.sh "${PE_FUZZ_SECONDS:-20}"
