#!/usr/bin/env bash
# Packs the binaries scripts/gpu_check.sh runs, from a CUDA build made here, for the lent GPU
# machine: building there costs minutes of the device tool's 15. The binaries stripped are
# about 35 MB, too much beside .gpu-deps (36 MB) and the tree under the device tool's 64 MiB,
# so they also go into DIR.tar.gz (about a third of that), which is what travels:
# scripts/gpu_check.sh --prebuilt DIR.tar.gz unpacks and runs them (and builds there after
# all when one cannot load its libraries).
#
#   scripts/pack_gpu_build.sh [BUILD] [DIR]      (defaults: build, .gpu-build)
#
# BUILD must be configured with CUDA (PE_WITH_CUDA ON or AUTO with the toolkit found); the
# binaries are brought up to date first (-j2). DIR gets apps/pe-actor-run, tests/gpu_* and
# tests/cuda_*, bench/gpu_bench (stripped, the build's layout) and built.txt (commit,
# compilers). With the device tool: carry [".gpu-deps", ".gpu-build.tar.gz"] (both ignored by
# .gitignore) and run `scripts/gpu_check.sh --prebuilt .gpu-build.tar.gz`. The binaries find their
# Debian libraries through the .debs of scripts/pack_gpu_deps.sh, which gpu_check.sh unpacks.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
dir=${2:-$root/.gpu-build}
cache=$build/CMakeCache.txt
[[ -f $cache ]] || { echo "pack_gpu_build: no $cache (configure a CUDA build first)" >&2; exit 2; }
grep -q '^CMAKE_CUDA_COMPILER:' "$cache" ||
  { echo "pack_gpu_build: $build is not a CUDA build (no CMAKE_CUDA_COMPILER in its cache)" >&2; exit 2; }

binaries=(apps/pe-actor-run bench/gpu_bench)
for source in "$root"/tests/gpu_*_test.cpp "$root"/tests/cuda_*_test.cpp; do
  binaries+=("tests/$(basename "$source" .cpp)")
done
targets=()
for b in "${binaries[@]}"; do targets+=("$(basename "$b")"); done
binaries+=(bench/libpe_cuda_api_count.so) # the LD_PRELOAD counter of CUDA runtime calls
targets+=(pe_cuda_api_count)
binaries+=(bench/cuda_launch_threads) # how CUDA calls scale with host threads
targets+=(cuda_launch_threads)
cmake --build "$build" -j 2 --target "${targets[@]}"

rm -rf "$dir"
for b in "${binaries[@]}"; do
  mkdir -p "$dir/$(dirname "$b")"
  strip -o "$dir/$b" "$build/$b"
done
{
  echo "commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . ':!*.md' || echo ' plus uncommitted changes')"
  echo "built $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  grep -E '^CMAKE_(CXX|CUDA)_COMPILER:|^CMAKE_BUILD_TYPE:|^CMAKE_CUDA_ARCHITECTURES:' "$cache" | sed 's/:[A-Z]*=/ = /'
} >"$dir/built.txt"
cat "$dir/built.txt"
tar -czf "$dir.tar.gz" -C "$(dirname "$dir")" "$(basename "$dir")"
du -sh "$dir" "$dir.tar.gz"
