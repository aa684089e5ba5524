#!/usr/bin/env bash
# Runs on a GPU machine what CI cannot: builds with CUDA, runs the GPU tests, races a training
# step under compute-sanitizer, and the GPU benchmark.
#
#   scripts/gpu_check.sh [--deps DIR] [--build DIR] [--prebuilt DIR] [--all-tests]
#
#   --deps DIR   .deb files from scripts/pack_gpu_deps.sh (default .gpu-deps), unpacked with
#                scripts/unpack_gpu_deps.sh into /tmp/pe-gpu-deps when the machine lacks
#                the Debian libraries (the lent GPU machine has CUDA, CMake and ninja only).
#                With the device tool: pack here, then run with carry [".gpu-deps"] and the
#                command `scripts/gpu_check.sh`.
#   --build DIR  build folder (default build-gpu), configured with -DPE_WITH_CUDA=ON
#   --prebuilt DIR  the binaries the checks run, built elsewhere with CUDA and packed by
#                scripts/pack_gpu_build.sh (default none), a folder or its DIR.tar.gz
#                (unpacked into /tmp/pe-gpu-prebuilt): no configure or build here, which
#                saves the device tool's minutes; when one of them cannot load its libraries
#                on this machine (ldd says "not found"), it says which and builds after all
#   --all-tests  builds everything and also runs the whole test suite (by default only
#                pe-actor-run, the GPU tests and the GPU benchmark are built)
#   --skip LIST  leaves out the stages named, comma-separated, of trace, api-count,
#                launch-threads, gpu-bench and sanitizers (racecheck and memcheck), to fit a
#                short device lease; the build and the GPU tests always run
#
# Stages (each says PASS or FAIL; the exit status is non-zero when any failed), in the order
# of what matters most, so that a run stopped at its time limit has done the most important:
#   1. a GPU must be there (nvidia-smi -L lists one);
#      without one this prints why and exits 1 at once
#   2. unpack the dependencies, find cuDNN and NCCL (the toolkit's, else PyTorch's wheels'),
#      configure, build (or take --prebuilt's binaries)
#   3. every gpu_* and cuda_* test binary (ctest -L gpu)
#   4. a traced, hazard-checked run on gpu:0x2 (BUILD/gpu_check/gpu_trace.json), and traces
#      of the MLP, the CNN and a program Paddle saved (the ResNet fixture, its parameters and
#      batch) on gpu:0 (trace_*.json; all of them in traces.tar.gz)
#   5. the CUDA runtime calls of 50 training steps on gpu:0 and on gpu:0x2 (counted by
#      bench/cuda_api_count, when the build has it): what a step costs the host, and where
#      each stream's host thread spent its time (PE_STREAM_PROFILE=1); then how CUDA calls
#      scale with host threads (bench/cuda_launch_threads) and the MLP on gpu:0 against
#      gpu:0x2, each with and without --cuda-graphs, interleaved
#   6. the GPU benchmark (bench/gpu_bench), when the build has one
#   7. compute-sanitizer --tool racecheck, then --tool memcheck, each on one training step
#      of the MLP, the CNN and the Paddle ResNet fixture on gpu:0, and on five steps of the
#      MLP on gpu:0x2 with --cuda-graphs (a capture and its replays)
# Logs go to BUILD/gpu_check/ (and to $OUT/ when that is set, as on the device tool).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
deps=$root/.gpu-deps
build=$root/build-gpu
all_tests=0
skip=
prebuilt=
while (( $# > 0 )); do
  case $1 in
    --deps) deps=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --prebuilt) prebuilt=$2; shift 2 ;;
    --all-tests) all_tests=1; shift ;;
    --skip) skip=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument $1" >&2; exit 2 ;;
  esac
done

IFS=, read -r -a skip_list <<<"$skip"
for name in "${skip_list[@]}"; do
  case $name in
    trace|api-count|launch-threads|gpu-bench|sanitizers) ;;
    *) echo "gpu_check: --skip: no stage '$name' to skip (trace, api-count, launch-threads, gpu-bench, sanitizers)" >&2
       exit 2 ;;
  esac
done

# 1. A GPU, before anything slow.
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu_check: no GPU on this machine: nvidia-smi is not installed (no NVIDIA driver)" >&2
  exit 1
fi
if ! gpus=$(nvidia-smi -L 2>&1) || [[ -z $gpus ]]; then
  echo "gpu_check: no GPU on this machine: nvidia-smi -L says: ${gpus:-nothing}" >&2
  exit 1
fi
echo "gpu_check: $gpus"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null |
  sed 's/^/gpu_check: nvidia-smi: /'
# gpu_bench reads the PyTorch scripts from here (a --prebuilt binary was built elsewhere).
export PE_SOURCE_DIR=$root
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
command -v nvcc >/dev/null || { echo "gpu_check: nvcc not found (CUDA toolkit)" >&2; exit 1; }

logs=$build/gpu_check
mkdir -p "$logs"
declare -A result
failed=0
save() { [[ -n ${OUT:-} && -d ${OUT:-} ]] && cp "$@" "$OUT/" 2>/dev/null; return 0; }
# The stages' logs, not those of a build that passed: the device tool brings back 8 files at
# most, and the trace archive matters more than a successful build's log.
stage_logs() { find "$logs" -maxdepth 1 -name '*.log' ! -name configure.log ! -name build.log | sort; }
skipped() { # skipped NAME: whether --skip named stage NAME (then says so)
  [[ ,$skip, == *,$1,* ]] || return 1
  echo "gpu_check: $1: skipped (--skip)"
}
stage() { # stage NAME STATUS
  result[$1]=$([[ $2 == 0 ]] && echo PASS || echo "FAIL ($2)")
  [[ $2 == 0 ]] || failed=1
  echo "gpu_check: $1: ${result[$1]}"
  # The logs so far, after every stage: a run the device tool stops at its time limit still
  # brings back what it did. Run again on the warm machine: the build is incremental.
  mapfile -t saved < <(stage_logs)
  (( ${#saved[@]} > 0 )) && save "${saved[@]}"
  return 0
}

# 2. Dependencies, configure, build.
prefix_args=()
if [[ -d $deps ]] && compgen -G "$deps/*.deb" >/dev/null; then
  "$root/scripts/unpack_gpu_deps.sh" "$deps" /tmp/pe-gpu-deps || exit 1
  # shellcheck disable=SC1091
  . /tmp/pe-gpu-deps/env.sh
  prefix_args=(-DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH")
elif ! { [[ -f /usr/include/caf/all.hpp ]] || [[ -f /usr/local/include/caf/all.hpp ]]; }; then
  echo "gpu_check: no $deps/*.deb and no CAF on this machine: run scripts/pack_gpu_deps.sh where apt works and bring $deps" >&2
  exit 1
fi
# cuDNN and NCCL: the toolkit's when /usr/local/cuda has them, else the PyTorch wheels'
# (nvidia-cudnn-cu13, nvidia-nccl-cu13: include/ and lib/ with only the versioned .so), found
# through python3 and handed to CMake as CUDNN_ROOT / NCCL_ROOT; their lib/ goes on
# LD_LIBRARY_PATH so that the binaries (and cuDNN's own dlopen of its engines) find them.
python_package_dir() { # python_package_dir MODULE: the folder of a python3 package, or nothing
  python3 -c "import importlib, os; m = importlib.import_module('$1'); \
print(os.path.dirname(m.__file__) if getattr(m, '__file__', None) else list(m.__path__)[0])" 2>/dev/null
}
header_version() { # header_version FILE PREFIX: MAJOR.MINOR.PATCH(LEVEL) from #defines
  local v=() part
  for part in MAJOR MINOR PATCH; do
    v+=("$(grep -oE "^#define ${2}_${part}[A-Z]* +[0-9]+" "$1" 2>/dev/null | head -1 | grep -oE '[0-9]+$')")
  done
  local IFS=.
  echo "${v[*]}"
}
library_args=()
library_dirs=()
find_cuda_library() { # find_cuda_library NAME HEADER VERSION_HEADER PREFIX MODULE CMAKE_ROOT_VAR
  local dir
  if [[ -f /usr/local/cuda/include/$2 ]]; then
    dir=/usr/local/cuda
  else
    dir=$(python_package_dir "$5")
    if [[ -z $dir || ! -f $dir/include/$2 ]]; then
      # Another wheel layout (CUDA 13's nvidia/cu13/...): the header's folder under the
      # python3 package "nvidia", if any.
      local header
      header=$(find "$(python_package_dir nvidia)" -maxdepth 5 -path "*/include/$2" 2>/dev/null | head -1)
      dir=${header:+$(dirname "$(dirname "$header")")}
    fi
    if [[ -z $dir ]]; then
      echo "gpu_check: $1: none (no /usr/local/cuda/include/$2, and python3 has no $5 with include/$2)"
      return
    fi
    library_args+=("-D$6=$dir")
    library_dirs+=("$dir/lib")
    [[ -d $dir/lib64 ]] && library_dirs+=("$dir/lib64")
  fi
  echo "gpu_check: $1 $(header_version "$dir/include/$3" "$4") from $dir"
}
find_cuda_library cuDNN cudnn.h cudnn_version.h CUDNN nvidia.cudnn CUDNN_ROOT
find_cuda_library NCCL nccl.h nccl.h NCCL nvidia.nccl NCCL_ROOT
if (( ${#library_dirs[@]} > 0 )); then
  LD_LIBRARY_PATH=$(IFS=:; echo "${library_dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
fi
# Only what the checks run (the device tool allows 10 minutes a command), unless --all-tests.
gpu_tests=()
for source in "$root"/tests/gpu_*_test.cpp "$root"/tests/cuda_*_test.cpp; do
  [[ -f $source ]] && gpu_tests+=("$(basename "$source" .cpp)")
done
binaries=(apps/pe-actor-run)
for t in "${gpu_tests[@]}"; do binaries+=("tests/$t"); done
[[ -f $root/bench/gpu_bench.cpp ]] && binaries+=(bench/gpu_bench)
[[ -f $root/bench/cuda_api_count/cuda_api_count.cpp ]] && binaries+=(bench/libpe_cuda_api_count.so)
[[ -f $root/bench/cuda_launch_threads.cu ]] && binaries+=(bench/cuda_launch_threads)

# --prebuilt: every binary must be there and find all its libraries here.
if [[ $prebuilt == *.tar.gz ]]; then
  if ! { rm -rf /tmp/pe-gpu-prebuilt && mkdir -p /tmp/pe-gpu-prebuilt &&
          tar -xzf "$prebuilt" -C /tmp/pe-gpu-prebuilt; }; then
    echo "gpu_check: --prebuilt $prebuilt: cannot unpack it into /tmp/pe-gpu-prebuilt" >&2
    exit 1
  fi
  prebuilt=$(find /tmp/pe-gpu-prebuilt -mindepth 1 -maxdepth 1 -type d | head -1)
fi
use_prebuilt=0
if [[ -n $prebuilt ]] && (( ! all_tests )); then
  use_prebuilt=1
  for b in "${binaries[@]}"; do
    if [[ ! -x $prebuilt/$b ]]; then
      echo "gpu_check: --prebuilt $prebuilt has no $b: building here"
      use_prebuilt=0
    elif missing=$(ldd "$prebuilt/$b" 2>&1 | grep "not found"); then
      echo "gpu_check: --prebuilt $b cannot load here, not found: $(awk '{print $1}' <<<"$missing" | sort -u | xargs): building here"
      use_prebuilt=0
    fi
    (( use_prebuilt )) || break
  done
fi
if (( use_prebuilt )); then
  build=$(cd "$prebuilt" && pwd)
  logs=$build/gpu_check
  mkdir -p "$logs"
  [[ -f $build/built.txt ]] && sed 's/^/gpu_check: prebuilt: /' "$build/built.txt"
  stage build 0
else
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPE_WITH_CUDA=ON \
    -DPE_PYTHON=OFF "${prefix_args[@]}" "${library_args[@]}" >"$logs/configure.log" 2>&1
  status=$?
  targets=(--target)
  for b in "${binaries[@]}"; do
    name=$(basename "$b")
    [[ $name == lib*.so ]] && name=${name#lib} && name=${name%.so}
    targets+=("$name")
  done
  (( all_tests )) && targets=()
  if (( status == 0 )); then
    cmake --build "$build" -j "$(nproc)" "${targets[@]}" >"$logs/build.log" 2>&1
    status=$?
  fi
  stage build $status
  if (( status != 0 )); then
    tail -40 "$logs/configure.log" "$logs/build.log" 2>/dev/null
    save "$logs/configure.log" "$logs/build.log"
    exit 1
  fi
fi

# Every command below runs under a time limit, so that one hang cannot use up the device
# tool's 600 s: SECONDS, then SIGKILL 10 s later; a timeout says so and fails its stage.
limited() {
  local seconds=$1
  shift
  timeout -k 10 "$seconds" "$@"
  local rc=$?
  if (( rc == 124 || rc == 137 )); then
    echo "gpu_check: TIMED OUT after ${seconds} s: $*"
  fi
  return $rc
}

# The tests that start pe-actor-run processes (gpu_jobs_test) start this build's.
export PE_RUN_BINARY=$build/apps/pe-actor-run

# 3. The GPU tests: every gpu_* and cuda_* test binary (ctest -L gpu runs the same ones).
# A GPU test that skips here, where nvidia-smi shows a GPU, for want of a GPU or of the CUDA
# kernels means the build or the CUDA runtime does not see it: that fails the stage too
# (only the tests needing more GPUs than the machine has may skip).
status=0
: >"$logs/gpu_tests.log"
for t in "${gpu_tests[@]}"; do
  limited 120 "$build/tests/$t" >"$logs/one_test.log" 2>&1 || status=1
  { echo "== $t"; cat "$logs/one_test.log"; } >>"$logs/gpu_tests.log"
  count() { grep -oE "^\[  $1 *\] [0-9]+ tests?" "$logs/one_test.log" | grep -oE '[0-9]+' | head -1; }
  p=$(count PASSED) k=$(count SKIPPED) f=$(count FAILED)
  echo "gpu_check: $t: ${p:-0} passed, ${k:-0} skipped, ${f:-0} failed"
done
rm -f "$logs/one_test.log"
if grep -qE "^no GPU: |built without the CUDA kernels" "$logs/gpu_tests.log"; then
  echo "gpu_check: GPU tests skipped although nvidia-smi lists a GPU:"
  grep -E "^no GPU: |built without the CUDA kernels" "$logs/gpu_tests.log" | sort -u | head -5
  status=1
fi
stage gpu-tests $status
grep -E "^\[  FAILED  \] [A-Z]|^no GPU|TIMED OUT" "$logs/gpu_tests.log" | sort -u | head -20
if (( all_tests )); then
  (cd "$build" && ctest -j "$(nproc)" --output-on-failure --timeout 300) >"$logs/all_tests.log" 2>&1
  stage all-tests $?
  tail -5 "$logs/all_tests.log"
fi

resnet=$root/tests/data/paddle_resnet_small
resnet_flags=(--model "$resnet/main.pb" --startup "$resnet/startup.pb" --load-params "$resnet/params"
              --data "npy:$resnet" --batch-size 32 --no-shuffle)

# 4. Traced runs through the CLI: two logical places on gpu:0, their spans the device's
# times, checked for hazards (exit 3 on a violation); and, unchecked, the MLP at the same
# global batch on one place and the CNN at batch 64, to read where a step's time goes. The
# trace files come back as one archive (the device tool brings back 8 files at most)
# for Perfetto or pe-actor-trace.
if ! skipped trace; then
limited 60 "$build/apps/pe-actor-run" --places gpu:0x2 --steps 6 --batch-size 256 --trace "$logs/gpu_trace.json" \
  --trace-steps 4:5 --check-hazards >"$logs/trace.log" 2>&1
status=$?
for run in "mlp gpu:0 256" "cnn gpu:0 64"; do
  read -r model places batch <<<"$run"
  echo "== --model $model --places $places --batch-size $batch" >>"$logs/trace.log"
  limited 60 "$build/apps/pe-actor-run" --model "$model" --places "$places" --steps 6 --batch-size "$batch" \
    --trace "$logs/trace_${model}_${places/:/}.json" --trace-steps 4:5 >>"$logs/trace.log" 2>&1 || status=1
done
# A program Paddle saved, through the CLI on gpu:0: the ResNet fixture with Paddle's
# parameters and batch (its losses are checked against Paddle's by gpu_paddle_programs_test).
echo "== --model tests/data/paddle_resnet_small (Paddle's files) --places gpu:0" >>"$logs/trace.log"
limited 60 "$build/apps/pe-actor-run" "${resnet_flags[@]}" --places gpu:0 --steps 6 \
  --trace "$logs/trace_resnet_small_gpu0.json" --trace-steps 4:5 >>"$logs/trace.log" 2>&1 || status=1
stage trace $status
tail -3 "$logs/trace.log"
mapfile -t traces < <(cd "$logs" && ls gpu_trace.json trace_*.json 2>/dev/null)
(( ${#traces[@]} > 0 )) && tar -czf "$logs/traces.tar.gz" -C "$logs" "${traces[@]}" && save "$logs/traces.tar.gz"
fi

# 5. CUDA runtime calls per training step (the MLP at global batch 512), one place and two
# logical places on the one GPU, those with their gradients' all-reduces in 4 MB buckets too.
if [[ -f $build/bench/libpe_cuda_api_count.so ]] && ! skipped api-count; then
  status=0
  : >"$logs/api_count.log"
  # The last two: host-to-device copies straight from pageable memory, as before
  # devices/cuda/pinned_staging (PE_PINNED_STAGING=0), for comparison.
  for run in "--places gpu:0" "--places gpu:0x2" "--places gpu:0x2 --fuse-allreduce-mb 4" \
      "--places gpu:0 --cuda-graphs" "--places gpu:0x2 --cuda-graphs" \
      "PE_PINNED_STAGING=0 --places gpu:0" "PE_PINNED_STAGING=0 --places gpu:0x2"; do
    staging=1 flags=$run
    [[ $run == PE_PINNED_STAGING=0* ]] && staging=0 flags=${run#PE_PINNED_STAGING=0 }
    echo "== $run --steps 50 --batch-size 512" >>"$logs/api_count.log"
    # shellcheck disable=SC2086 # the flags are words
    LD_PRELOAD=$build/bench/libpe_cuda_api_count.so PE_CUDA_API_COUNT_STEPS=50 PE_STREAM_PROFILE=1 \
      PE_PINNED_STAGING=$staging limited 60 "$build/apps/pe-actor-run" $flags --steps 50 --batch-size 512 \
      >>"$logs/api_count.log" 2>&1 || status=1
  done
  stage api-count $status
  grep -E "^==|per_step|^trained|^stream profile" "$logs/api_count.log"
fi

# 5b. Whether host threads launching into one GPU at once slow each other down
# (bench/cuda_launch_threads), then the MLP at global batch 512 on gpu:0 and on gpu:0x2,
# three rounds interleaved, so that the ratio comes from the same minutes of the same
# machine, with the stream and allocator profiles. Into api_count.log: the device tool
# brings back 8 files at most.
if [[ -x $build/bench/cuda_launch_threads ]] && ! skipped launch-threads; then
  status=0
  {
    echo "== bench/cuda_launch_threads"
    threads_table=$(limited 60 "$build/bench/cuda_launch_threads") || status=1
    echo "$threads_table"
    [[ $threads_table == *"no GPU"* ]] && status=1
    for round in 1 2 3; do
      for run in "--places gpu:0" "--places gpu:0x2" "--places gpu:0 --cuda-graphs" "--places gpu:0x2 --cuda-graphs"; do
        echo "== round $round: $run --steps 300 --batch-size 512"
        # shellcheck disable=SC2086 # the flags are words
        PE_STREAM_PROFILE=1 limited 60 "$build/apps/pe-actor-run" $run --steps 300 \
          --batch-size 512 2>&1 | grep -E "^trained|profile|error|CUDA graphs" || status=1
      done
    done
  } >>"$logs/api_count.log" 2>&1
  stage launch-threads $status
  sed -n '/^== bench\/cuda_launch_threads/,$p' "$logs/api_count.log"
fi

# 6. The GPU benchmark.
if skipped gpu-bench; then
  :
elif [[ -x $build/bench/gpu_bench ]]; then
  limited 180 "$build/bench/gpu_bench" >"$logs/gpu_bench.log" 2>&1
  status=$?
  # Without a GPU the benchmark says so and exits 0; here, where nvidia-smi lists one, that
  # means it measured nothing.
  grep -q "^gpu_bench: no GPU" "$logs/gpu_bench.log" && status=1
  stage gpu-bench $status
  cat "$logs/gpu_bench.log"
else
  echo "gpu_check: no GPU benchmark in this build"
fi

# 7. Races and memory errors in one training step on gpu:0, last: the sanitizers are the
# slowest stage and the likeliest to meet the device tool's time limit.
sanitize() { # sanitize TOOL: compute-sanitizer on one step of the MLP, the CNN and the Paddle ResNet, and on CUDA-graph replays, stage TOOL
  local tool=$1
  if ! command -v compute-sanitizer >/dev/null; then
    echo "gpu_check: compute-sanitizer not found"
    stage "$tool" 127
    return
  fi
  local status=0 run
  : >"$logs/$tool.log"
  # The last: CUDA graphs, a captured step and replays of it on two places sharing the GPU.
  for run in "--model mlp --batch-size 64" "--model cnn --batch-size 64" "resnet" "graphs"; do
    local flags
    case $run in
      resnet) flags=("${resnet_flags[@]}" --places gpu:0 --steps 1) ;;
      graphs) flags=(--model mlp --batch-size 256 --places gpu:0x2 --cuda-graphs --steps 5) ;;
      *) read -r -a flags <<<"$run --places gpu:0 --steps 1" ;;
    esac
    echo "== ${flags[*]}" >>"$logs/$tool.log"
    limited 120 compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$build/apps/pe-actor-run" "${flags[@]}" >>"$logs/$tool.log" 2>&1 || status=1
  done
  # Seen on the device tool's gVisor machines (KINDS.md): the sanitizer refuses the GPU, so
  # nothing was checked. Still a failure, named as the machine's, not the engine's.
  if grep -q "Device not supported" "$logs/$tool.log"; then
    echo "gpu_check: compute-sanitizer refused this machine's GPU (\"Device not supported\", as on gVisor" \
      "runtimes): nothing was checked; run on a machine where it works (the H100 kind, Firecracker)"
  fi
  stage "$tool" $status
  grep -E "^==|SUMMARY|^trained" "$logs/$tool.log"
}
if ! skipped sanitizers; then
  sanitize racecheck
  sanitize memcheck
fi

mapfile -t saved < <(stage_logs)
(( ${#saved[@]} > 0 )) && save "${saved[@]}"
echo "gpu_check: summary:"
for k in build gpu-tests all-tests trace api-count launch-threads gpu-bench racecheck memcheck; do
  [[ -n ${result[$k]:-} ]] && echo "  $k: ${result[$k]}"
done
exit $failed
