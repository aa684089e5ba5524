#!/usr/bin/env bash
# Builds with a sanitizer and runs the tests that exercise concurrency and memory:
# the CPU device (streams, events), the communicator and collectives, the actor executor,
# the reference executor, the hazard checker, tracing, parameter files, and training the
# CNN and Paddle's programs on several places (oneDNN kernels on the device threads), and
# the collectives and jobs across processes (CAF networking and Gloo; the multi-process test runs the
# sanitized pe-actor-run, whose reports fail its exit status), admission by the job token and
# TLS links between processes, the data links beside CAF, stall reports and collectives called differently by their ranks,
# the pool of large host blocks and the lists of small ones that threads take and give back,
# the oneDNN kernels' per-thread primitive cache, the spin lock of the CPU streams' queues, and the idle
# work the places' threads take (the next batch's copy), and steps whose tails overlap the next step.
# Usage: scripts/sanitize.sh thread|address [TEST...]   (default: every test listed below)
# ThreadSanitizer runs the tests against a TSan-instrumented CAF (scripts/build_caf_tsan.sh):
# with Debian's uninstrumented libcaf_core it reports races inside CAF's mailboxes.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh thread|address [TEST...]}
shift
build=build-${kind}san
scripts/install_deps.sh
# The TSan build's binaries look for the instrumented CAF first (RUNPATH), so that running one
# by hand (build-threadsan/apps/pe-actor-run) does not report Debian's CAF's internals.
rpath=()
[[ "$kind" == thread ]] && rpath=(-DCMAKE_BUILD_RPATH="$PWD/build-caf-tsan/lib")
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPE_SANITIZE="$kind" "${rpath[@]}"
tests=(device_test communicator_test cpu_collective_test parallel_executor_test
       reference_executor_test ssa_graph_test hazard_test trace_test param_files_test
       dropout_ops_test cnn_model_test paddle_training_test net_communicator_test
       process_group_test process_executor_test multiprocess_test collective_rendezvous_test
       queued_stream_test host_gpu_executor_test conv_algorithms_test distinct_gpus_test
       caching_allocator_test gloo_communicator_test job_admission_test tls_links_test
       cli_job_security_test stall_test collective_desync_test cli_stall_test host_block_cache_test
       firing_groups_test small_block_cache_test dnnl_cache_test pool_ops_test run_meanwhile_test
       norm_planes_test batch_norm_ops_test json_integer_test spin_mutex_test shm_communicator_test
       data_link_test idle_work_test place_pinning_test overlap_steps_test)
if (( $# > 0 )); then tests=("$@"); fi
cmake --build "$build" -j2 --target "${tests[@]}"
if [[ "$kind" == thread ]]; then
  scripts/build_caf_tsan.sh build-caf-tsan
  export LD_LIBRARY_PATH="$PWD/build-caf-tsan/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp"
export ASAN_OPTIONS="detect_leaks=1 halt_on_error=1"
for t in "${tests[@]}"; do
  echo "== $t under ${kind} sanitizer"
  "$build/tests/$t" --gtest_brief=1
done
