#!/usr/bin/env bash
# Unpacks the .deb files scripts/pack_gpu_deps.sh packed into a prefix, and checks a build
# configured against it. See pack_gpu_deps.sh's header for the whole story.
#
#   scripts/unpack_gpu_deps.sh DIR PREFIX          dpkg -x every DIR/*.deb into PREFIX, make
#                                                  the alternatives' links, write PREFIX/env.sh
#   scripts/unpack_gpu_deps.sh --check PREFIX BUILD
#                                                  every dependency BUILD's CMake cache names
#                                                  must lie in PREFIX (or be CUDA's); prints them
# Configure against the prefix:
#   . PREFIX/env.sh && cmake -S . -B BUILD -G Ninja -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH"
set -euo pipefail

if [[ ${1:-} == --check ]]; then
  prefix=$(cd "$2" && pwd)
  cache=$3/CMakeCache.txt
  [[ -f $cache ]] || { echo "unpack_gpu_deps: no $cache" >&2; exit 2; }
  # The cache entries that say where each dependency was found.
  pattern='^(Protobuf_INCLUDE_DIR|Protobuf_LIBRARY_RELEASE|Protobuf_PROTOC_EXECUTABLE|Protobuf_PROTOC_LIBRARY_RELEASE|CAF_INCLUDE_DIR[A-Z_]*|CAF_LIBRARY[A-Z_]*|CAF_[A-Z_]*_LIBRARY[A-Z_]*|Boost_DIR|boost_program_options_DIR|boost_headers_DIR|GTest_DIR|benchmark_DIR|dnnl_DIR|nlohmann_json_DIR|ZLIB_INCLUDE_DIR|ZLIB_LIBRARY_RELEASE|BLAS_[a-z]+_LIBRARY|CBLAS_INCLUDE_DIR|OpenCL_INCLUDE_DIR|OpenCL_LIBRARY|Gloo_DIR):[A-Z]+=(.*)$'
  bad=0 seen=0
  while IFS= read -r line; do
    [[ $line =~ $pattern ]] || continue
    name=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
    [[ -z $value || $value == *-NOTFOUND ]] && continue
    seen=$((seen + 1))
    resolved=$(readlink -f "$value" 2>/dev/null || echo "$value")
    if [[ $value == "$prefix"/* || $resolved == "$prefix"/* ]]; then
      echo "  prefix  $name = $value"
    else
      echo "  OUTSIDE $name = $value"
      bad=1
    fi
  done <"$cache"
  if (( seen == 0 )); then echo "unpack_gpu_deps: no dependency entries in $cache" >&2; exit 2; fi
  if (( bad )); then echo "unpack_gpu_deps: some dependencies were found outside $prefix" >&2; exit 1; fi
  echo "unpack_gpu_deps: all $seen dependency entries lie in $prefix"
  exit 0
fi

dir=${1:?usage: unpack_gpu_deps.sh DIR PREFIX}
prefix=${2:?usage: unpack_gpu_deps.sh DIR PREFIX}
shopt -s nullglob
debs=("$dir"/*.deb)
(( ${#debs[@]} > 0 )) || { echo "unpack_gpu_deps: no .deb files in $dir (run scripts/pack_gpu_deps.sh where apt works)" >&2; exit 2; }
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
for deb in "${debs[@]}"; do dpkg -x "$deb" "$prefix"; done

arch=x86_64-linux-gnu
lib=$prefix/usr/lib/$arch
# Debian's postinst scripts point these at the chosen BLAS through update-alternatives;
# dpkg -x runs no scripts, so the links are made here (OpenBLAS, the pthread flavour).
for name in libblas.so libblas.so.3 liblapack.so liblapack.so.3 libopenblas.so libopenblas.so.0; do
  [[ -e $lib/openblas-pthread/$name && ! -e $lib/$name ]] && ln -s "openblas-pthread/$name" "$lib/$name"
done
[[ -e $prefix/usr/include/$arch/openblas-pthread/cblas.h && ! -e $prefix/usr/include/$arch/cblas.h ]] &&
  ln -s openblas-pthread/cblas.h "$prefix/usr/include/$arch/cblas.h"
# Absolute links inside the packages point at /usr: re-point them into the prefix.
while IFS= read -r link; do
  target=$(readlink "$link")
  [[ $target == /* && -e $prefix$target ]] && ln -sfn "$prefix$target" "$link"
done < <(find "$prefix" -type l)

# Some CMake package files name their library by an absolute /usr path (Gloo's
# GlooTargets-*.cmake: IMPORTED_LOCATION "/usr/lib/libgloo.so..."), which a machine without
# the package lacks: point those at the prefix's copies.
while IFS= read -r file; do
  sed -i "s#\"/usr/lib/#\"$prefix/usr/lib/#g" "$file"
done < <(grep -rl '"/usr/lib/' "$prefix/usr/share/cmake" "$prefix/usr/lib/$arch/cmake" 2>/dev/null)

cat >"$prefix/env.sh" <<EOF
# Written by scripts/unpack_gpu_deps.sh: the Debian libraries unpacked in this prefix.
export PE_DEPS_PREFIX="$prefix"
export CMAKE_PREFIX_PATH="$prefix/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
export PATH="$prefix/usr/bin:\$PATH"
export LD_LIBRARY_PATH="$lib:$lib/openblas-pthread:$prefix/usr/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
EOF
echo "unpack_gpu_deps: ${#debs[@]} packages in $prefix; . $prefix/env.sh before cmake and running"
