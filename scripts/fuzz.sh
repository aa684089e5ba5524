#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz) with clang, libFuzzer, ASan and UBSan in build-fuzz,
# replays each target's regression corpus (ctest), then fuzzes every target for SECONDS
# (default 60) from its seeds (make_seeds: the builder's models and a program for every
# registered op, parameter, .npy, idx files and peer messages; plus the Paddle programs and
# .npy files under tests/data). Structure-aware mutation of programs: program_mutator.cpp.
# A finding stops its target and leaves crash-*/leak-*/timeout-* in build-fuzz/findings/<target>;
# the script then exits 1 naming it. Copy a finding into tests/fuzz/regressions/<target>/
# once fixed, so that ctest replays it from then on.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]      (SECONDS=0: build and replay only)
# Environment: FUZZ_JOBS (parallel targets, default 1), FUZZ_BUILD (default build-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
if (( ${#targets[@]} == 0 )); then
  targets=(program_binary program_text param_file npy idx net_message net_wire data_link checkpoint_record)
fi
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-1}

scripts/install_deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPE_FUZZ=ON -DPE_WITH_CUDA=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$build" -j2 --target make_seeds $(printf '%s_fuzz ' "${targets[@]}")

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
echo "== replaying the regression corpora (ASan + UBSan)"
ctest --test-dir "$build" --output-on-failure -R "^fuzz_regressions_($(IFS='|'; echo "${targets[*]}"))\$"
if [[ "$seconds" == 0 ]]; then exit 0; fi

seeds=$build/seeds
rm -rf "$seeds"
"$build/tests/fuzz/make_seeds" "$seeds"
for t in "${targets[@]}"; do mkdir -p "$seeds/$t"; done
for f in tests/data/*/main.pb tests/data/*/startup.pb tests/data/paddle_params/model.pdmodel; do
  cp "$f" "$seeds/program_binary/paddle_$(basename "$(dirname "$f")")_$(basename "$f")"
done
cp tests/data/npy/*.npy "$seeds/npy/"

fuzz_one() {
  local t=$1 corpus=$build/corpus/$1 findings=$build/findings/$1
  mkdir -p "$corpus" "$findings"
  # -rss_limit_mb: a reader that allocates what a header claims fails here, not the machine.
  if "$build/tests/fuzz/${t}_fuzz" "$corpus" "$seeds/$t" "tests/fuzz/regressions/$t" \
      -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
      -artifact_prefix="$findings/" -print_final_stats=1 >"$build/findings/$t.log" 2>&1; then
    echo "== $t: $(grep -E '^stat::number_of_executed_units' "$build/findings/$t.log" | awk '{print $2}') runs," \
         "$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$build/findings/$t.log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+'), no finding"
  else
    echo "== $t: FINDING (log: $build/findings/$t.log, inputs: $findings/)"
    grep -E "ERROR|runtime error|invariant|uncaught|terminate" "$build/findings/$t.log" | head -5
    return 1
  fi
}

status=0
running=0
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if (( running >= jobs )); then wait -n || status=1; running=$((running - 1)); fi
done
while (( running > 0 )); do wait -n || status=1; running=$((running - 1)); done
exit $status
