#!/usr/bin/env bash
# Packs the Debian libraries PE-Actor builds against, for a machine that has none of them and
# no network (the lent GPU machine: CUDA, CMake, ninja and a compiler, but no CAF, protobuf,
# Boost, GoogleTest, Google Benchmark, OpenBLAS, oneDNN, nlohmann-json or zlib headers).
#
# Here (Debian 12, with apt sources):   scripts/pack_gpu_deps.sh [DIR]      (default .gpu-deps)
#   `apt-get download`s into DIR the .deb files of those packages and of the libraries they
#   need at run time, except the C/C++ runtime and toolchain every build machine has
#   (libc6, libstdc++6, libgcc-s1, the compilers' own libraries, kerberos, ssl).
#   DIR/packages.txt lists what was packed. Needs no root.
# There (or here, to prove it):          scripts/unpack_gpu_deps.sh DIR PREFIX
#   `dpkg -x`es every .deb into PREFIX (never into /: the machine's own libraries stay),
#   makes the links Debian's alternatives would have made (libblas, libopenblas) and writes
#   PREFIX/env.sh, which exports
#     PE_DEPS_PREFIX      PREFIX
#     CMAKE_PREFIX_PATH   PREFIX/usr first: find_package finds the prefix's copies
#     PATH                PREFIX/usr/bin first: protoc
#     LD_LIBRARY_PATH     the prefix's library folders: the built binaries run
#   and scripts/gpu_check.sh sources it. scripts/unpack_gpu_deps.sh --check PREFIX BUILD
#   then lists each dependency CMake chose (from BUILD's cache) and fails when one lies
#   outside PREFIX.
# To take DIR to the GPU machine with the device tool: add /.gpu-deps/ to an ignore file (this
# repository's .gitignore has it) and name .gpu-deps in the run's `carry`.
set -euo pipefail

dir=${1:-.gpu-deps}
top=(
  libcaf-dev                     # CAF 0.17: core and io
  libprotobuf-dev protobuf-compiler
  libboost-program-options-dev
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libopenblas-dev libopenblas-pthread-dev
  libdnnl-dev                    # oneDNN
  ocl-icd-opencl-dev opencl-c-headers  # oneDNN's CMake config asks for OpenCL
  nlohmann-json3-dev
  zlib1g-dev
  libgloo-dev                    # the gloo collective backend (collectives/gloo/)
)
# What every machine that can compile C++ has, and what must not be replaced under a running
# system: the C library, the compiler's runtimes and headers, kerberos/ssl/rpc, debconf, and
# the base system that rdma-core's adduser drags in (passwd, PAM, tar, compression libraries).
skip='^(libc6|libc6-dev|libc-dev-bin|linux-libc-dev|libcrypt1|libcrypt-dev|libgcc-s1|libgcc-[0-9]+-dev|gcc-[0-9]+-base|libstdc\+\+6|libstdc\+\+-[0-9]+-dev|libatomic1|libitm1|libasan[0-9]+|liblsan0|libtsan[0-9]+|libubsan1|libhwasan0|libnsl2|libnsl-dev|libtirpc.*|rpcsvc-proto|libcom-err2|libgssapi-krb5-2|libk5crypto3|libkeyutils1|libkrb5.*|libssl3|zlib1g|debconf.*|dpkg|perl.*|libopenblas0-openmp|libopenblas0-serial|libopenblas-openmp-dev|libopenblas-serial-dev|adduser|passwd|tar|install-info|cdebconf|libdebian-installer4|libnewt0.52|libslang2|libtextwrap1|readline-common|libreadline8|libtinfo6|libacl1|libattr1|libaudit1|libaudit-common|libcap-ng0|libdb5.3|libpam.*|libpcre2-8-0|libselinux1|libsemanage.*|libsepol2|libmd0|libbz2-1.0|liblzma5|libzstd1)$'

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "${top[@]}" | grep -v '^ ' | grep -v '^<' | sort -u)
packages=()
for p in "${closure[@]}"; do
  [[ $p =~ $skip ]] || packages+=("$p")
done
echo "pack_gpu_deps: ${#packages[@]} packages into $dir"
(cd "$dir" && rm -f ./*.deb && apt-get download -q "${packages[@]}")
printf '%s\n' "${packages[@]}" >"$dir/packages.txt"
du -sh "$dir"
