#!/usr/bin/env bash
# Installs what PE-Actor needs to build, test and train, from Debian's packages.
# Idempotent: packages already present are skipped, so re-running costs one dpkg query.
# Usage: scripts/install_deps.sh [--with-data]   (--with-data adds Fashion-MNIST)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  ca-certificates                  # pip install . fetches its build requirements over HTTPS
  libcaf-dev                       # C++ Actor Framework 0.17
  libgloo-dev                      # Gloo: the gloo collective backend across processes
  libssl-dev                       # OpenSSL's libcrypto: checkpoint digests, the job token's HMAC
  iproute2 tcpdump                 # the network-namespace tests: hosts joined by veth, captures
  libprotobuf-dev protobuf-compiler
  libboost-program-options-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev                  # cblas_sgemm
  libdnnl-dev                      # oneDNN: CPU convolution, pooling, batch norm
  ocl-icd-opencl-dev opencl-c-headers  # dnnl-config.cmake asks for OpenCL (only recommended by libdnnl-dev)
  nlohmann-json3-dev               # metrics files
  zlib1g-dev                       # .gz idx data sets
  pybind11-dev python3-dev         # the Python module pe_actor (python/)
  python3-numpy python3-pytest     # its feeds and fetches, its tests (tests/python/)
  python3-venv                     # pip install . in a venv (scripts/test_python_package.sh)
  clang libclang-rt-14-dev         # the fuzz targets: libFuzzer, ASan, UBSan (scripts/fuzz.sh)
  libomp-dev                       # clang's OpenMP, which oneDNN's users need in the fuzz build
)
if [[ "${1:-}" == "--with-data" ]]; then
  packages+=(dataset-fashion-mnist)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if (( ${#missing[@]} == 0 )); then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
