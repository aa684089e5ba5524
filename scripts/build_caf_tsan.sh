#!/usr/bin/env bash
# Builds libcaf_core 0.17.6 with ThreadSanitizer from Debian's source package into DIR
# (default build-caf-tsan). Debian's libcaf_core is not instrumented, so TSan cannot see the
# synchronisation inside CAF's mailboxes and reports races that are not there; tests run
# against this build instead (LD_LIBRARY_PATH=DIR/lib). Takes ~10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=$(realpath -m "${1:-build-caf-tsan}")
if [[ -f "$dest/lib/libcaf_core.so.0.17.6" ]]; then
  echo "build_caf_tsan: $dest/lib/libcaf_core.so.0.17.6 exists"
  exit 0
fi
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cd "$src"
sources=/etc/apt/sources.list.d/pe-actor-deb-src.sources
if [[ -z "$(apt-cache showsrc actor-framework 2>/dev/null)" ]]; then
  sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > "$sources"
  apt-get update -qq
fi
# Only the upstream tarball is needed; Debian's patch tarball may be missing from mirrors.
apt-get source --download-only actor-framework >/dev/null 2>&1 || true
tarball=$(ls actor-framework_0.17.6*.orig.tar.gz 2>/dev/null | head -n 1)
[[ -n "$tarball" ]] || { echo "build_caf_tsan: could not download actor-framework source" >&2; exit 1; }
tar xzf "$tarball"
cmake -S actor-framework-0.17.6 -B "$dest" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DCAF_NO_IO=yes -DCAF_NO_OPENCL=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_PYTHON=yes \
  -DCAF_NO_TOOLS=yes -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_SUMMARY=yes \
  -DCAF_NO_COMPILER_CHECK=yes >/dev/null
cmake --build "$dest" -j2 --target libcaf_core_shared
