#!/usr/bin/env bash
# Installs the Python package the way Python users install it and runs the pytest suite
# (tests/python) against both numpy lines:
#   - `pip wheel .` in a plain venv: pip fetches the build requirements (scikit-build-core,
#     pybind11 >= 2.12) from PyPI into an isolated build environment and builds the module
#     with the project's CMake;
#   - that wheel installed into a plain venv with numpy 2 from PyPI, and into a venv with
#     --system-site-packages that sees Debian's numpy 1.24 (python3-numpy);
#   - the build tree's own module (Debian's pybind11 2.10, when the build has one) refusing
#     numpy 2 at import with an error that names pybind11, instead of misreading arrays.
# Needs the network (PyPI) and python3-venv (scripts/install_deps.sh installs it).
# Usage: scripts/test_python_package.sh [build-dir]   (default: build; the tests that run the
#        CLI use its apps/pe-actor-run, and the wheel is built with its build type)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
python=/usr/bin/python3 # Debian's: its numpy is the numpy 1 line
work=$build/python-package
run_binary=$PWD/$build/apps/pe-actor-run
[[ -x $run_binary ]] || { echo "test_python_package: build $build first (no $run_binary)" >&2; exit 2; }

rm -rf "$work"
mkdir -p "$work"
# The wheel's CMake build reuses the build tree's compiled objects through ccache when it
# compiles the same way: same build type, a build folder as deep as $build (the paths ccache
# hashes are taken relative to this checkout), the same CUDA setting and the
# same compilers (left to itself, the wheel's CMake took x86_64-linux-gnu-g++ where the build
# tree has c++, and ccache missed).
cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
build_type=$(cached CMAKE_BUILD_TYPE)
same_build=(--config-settings=cmake.define.PE_WITH_CUDA="$(cached PE_WITH_CUDA)")
for compiler in CMAKE_CXX_COMPILER CMAKE_CUDA_COMPILER; do
  value=$(cached "$compiler")
  if [[ -n $value && $value != *NOTFOUND ]]; then
    same_build+=(--config-settings=cmake.define.$compiler="$value")
  fi
done
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1

echo "test_python_package: pip wheel . (build type ${build_type:-Release})"
"$python" -m venv "$work/builder"
"$work/builder/bin/pip" wheel -q --no-deps -w "$work/wheels" \
  --config-settings=build-dir="$build-wheel" \
  --config-settings=cmake.build-type="${build_type:-Release}" \
  "${same_build[@]}" .
wheels=("$work"/wheels/pe_actor-*.whl)
(( ${#wheels[@]} == 1 )) && [[ -f ${wheels[0]} ]] || { echo "test_python_package: pip wheel made no wheel" >&2; exit 1; }
wheel=${wheels[0]}
echo "test_python_package: made $(basename "$wheel")"

# Runs the pytest suite with `venv`'s interpreter, which must see numpy `major`.x.
run_suite() { # venv major
  local venv=$1 major=$2 version
  version=$(cd "$work" && "$venv/bin/python" -c 'import numpy; print(numpy.__version__)')
  [[ ${version%%.*} == "$major" ]] || {
    echo "test_python_package: $venv has numpy $version, expected $major.x" >&2; exit 1; }
  echo "test_python_package: pytest with numpy $version ($venv)"
  (cd tests/python && env -u PYTHONPATH PYTHONDONTWRITEBYTECODE=1 PE_RUN_BINARY="$run_binary" \
     PE_TEST_DATA_DIR="$PWD/../data" "$venv/bin/python" -m pytest -q -p no:cacheprovider .)
}

"$python" -m venv "$work/numpy2"
"$work/numpy2/bin/pip" install -q "numpy>=2" pytest "$wheel"
run_suite "$PWD/$work/numpy2" 2

"$python" -m venv --system-site-packages "$work/debian-numpy"
"$work/debian-numpy/bin/pip" install -q --no-deps "$wheel"
run_suite "$PWD/$work/debian-numpy" 1

# The build tree's module, built with Debian's pybind11 (2.10), under numpy 2: it either
# reads numpy 2's arrays right (a pybind11 >= 2.12 build) or refuses at import naming pybind11.
if compgen -G "$build/python/pe_actor*.so" >/dev/null; then
  check='import numpy as np, pe_actor
a = np.arange(6, dtype=np.float32).reshape(2, 3)
b = pe_actor.engine_array(a)
assert b.dtype == np.float32 and (b == a).all(), b
print("reads numpy", np.__version__, "arrays right")'
  if out=$(cd "$work" && PYTHONPATH="$PWD/../python" "$PWD/numpy2/bin/python" -c "$check" 2>&1); then
    echo "test_python_package: the build tree's module $out"
  elif grep -q "built with pybind11" <<<"$out"; then
    echo "test_python_package: the build tree's module refuses numpy 2 clearly: ${out##*ImportError: }"
  else
    echo "test_python_package: the build tree's module under numpy 2: $out" >&2
    exit 1
  fi
fi
echo "test_python_package: passed"
