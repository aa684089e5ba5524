#!/usr/bin/env bash
# Builds the benchmarks (Release) and runs them all, then prints the machine and ONE markdown
# table of every result against its baseline measured in the same run, ready for the README.
# Each benchmark's own Google Benchmark report goes to <build-dir>/bench/<name>.log.
# Usage: scripts/bench.sh [build-dir]      (default: build-bench)
#        PLACES=N scripts/bench.sh         (places of the training benchmark, default 2)
#        BENCH_FLAGS="--benchmark_..." scripts/bench.sh   (Google Benchmark flags for every
#        benchmark; default: the median of 5 repetitions of at least 0.2 s each, the
#        repetitions of a program's benchmarks run in a random interleaved order: this
#        2-vCPU VM's speed drifts by tens of percent within a minute (three runs of one build
#        read the MLP's 2 places / 1 place 1.30x, 0.97x and 1.77x with each benchmark's
#        repetitions run back to back), so a ratio's two sides must take turns)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-bench}
places=${PLACES:-2}
read -r -a flags <<<"${BENCH_FLAGS:---benchmark_repetitions=5 --benchmark_min_time=0.2 --benchmark_enable_random_interleaving=true}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
cmake --build "$build" -j2 --target benchmarks pe-actor-run >&2

load=$(cut -d' ' -f1-3 /proc/loadavg)
rows=""
for source in bench/*_bench.cpp; do
  name=$(basename "$source" .cpp)
  args=("${flags[@]}")
  if [[ $name == training_bench ]]; then args+=(--places="$places"); fi
  # The sparse-gradient benchmark times whole training steps in forked processes (its own runs).
  if [[ $name == sparse_bench ]]; then args=(--steps=30 --dense-steps=3); fi
  log="$build/bench/$name.log"
  echo "running $name (report: $log)" >&2
  table=$("$build/bench/$name" "${args[@]}" 2>"$log") || { cat "$log" >&2; exit 1; }
  rows+=$(tail -n +3 <<<"$table")$'\n' # without the table header
done

# Programs Paddle saved, against Paddle's own executors and PyTorch (where those are installed).
echo "running paddle_programs_bench.py (Paddle and PyTorch where installed)" >&2
rows+=$(python3 bench/paddle_programs_bench.py "$build/apps/pe-actor-run")$'\n'

# The stall watch's cost in instructions (callgrind), which this noisy machine cannot time.
if command -v valgrind >/dev/null; then
  echo "running stall_watch_instructions.sh (callgrind, several minutes)" >&2
  rows+=$(bench/stall_watch_instructions.sh "$build/apps/pe-actor-run")$'\n'
else
  echo "no valgrind: bench/stall_watch_instructions.sh left out" >&2
fi

cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "Machine: $(nproc) cores, ${cpu:-unknown CPU}; load average before the run: $load"
echo
echo "| benchmark | configuration | value | baseline | ratio |"
echo "|---|---|---|---|---|"
printf '%s' "$rows"
