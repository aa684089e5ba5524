#!/usr/bin/env bash
# What the stall watch costs, counted in instructions rather than timed: on the shared 2-vCPU
# development machine the timed benchmark (stall_watch_bench) has control rows spreading by
# 10% and cannot show a 1% cost. Valgrind's callgrind counts every instruction every thread
# of pe-actor-run executes; the difference between runs of 10 and 30 steps is the cost of 20
# steps, without the start-up, with the watch on (--stall-timeout 300, the default) and off
# (--stall-timeout 0). Waits that spin count too, so a watch that made threads spin longer
# would show. Prints one markdown row per setting, as scripts/bench.sh's table.
#
#   bench/stall_watch_instructions.sh [PE_ACTOR_RUN] [PLACES] [BATCH]
#       (defaults: build/apps/pe-actor-run, cpu:1, 64)
# Needs valgrind; each run takes a minute or more (valgrind runs the threads one at a time).
set -euo pipefail
run=${1:-build/apps/pe-actor-run}
places=${2:-cpu:1}
batch=${3:-64}
command -v valgrind >/dev/null || { echo "stall_watch_instructions: valgrind is not installed" >&2; exit 2; }
[[ -x $run ]] || { echo "stall_watch_instructions: no $run (build pe-actor-run first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

instructions() { # instructions STEPS TIMEOUT: every thread's instructions over the whole run
  valgrind --tool=callgrind --callgrind-out-file="$work/cg" "$run" --places "$places" \
    --batch-size "$batch" --steps "$1" --stall-timeout "$2" >"$work/log" 2>&1 ||
    { cat "$work/log" >&2; exit 1; }
  sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$work/log"
}

declare -A per_step
for timeout in 0 300; do
  short=$(instructions 10 "$timeout")
  long=$(instructions 30 "$timeout")
  per_step[$timeout]=$(( (long - short) / 20 ))
done
on=${per_step[300]} off=${per_step[0]}
ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.4f", a / b }')
echo "| stall watch, instructions (mlp 784-256-128-10, sgd; callgrind) | actor executor, $places, global batch $batch, watch on (300 s) vs off: every thread's instructions per step (runs of 30 minus 10 steps) | $on instructions/step | $off instructions/step (watch off) | ${ratio}x |"
