#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/run/option_choice.hpp"
#include "collectives/process_backend.hpp"
#include "core/place.hpp"
#include "crypto/tls_files.hpp"
#include "data/data_format.hpp"
#include "graph/validate.hpp"

namespace pe {

/// Everything pe-actor-run was asked to do, checked for consistency by parse_options.
struct run_options {
  std::string model = "mlp"; ///< "mlp", "cnn" or the path of a ProgramDesc
  std::string startup;       ///< startup program path; set iff model is a path
  std::vector<int> hidden; ///< fc widths of the built-in model; empty: the model's own
  std::int64_t steps = 200;
  std::optional<std::int64_t> epochs; ///< when set, steps = epochs * batches per epoch
  std::int64_t batch_size = 64;
  double learning_rate = 0.1;
  std::string optimizer = "sgd";
  std::uint64_t seed = 1;
  std::string data = "synthetic"; ///< --data as given: "synthetic", "idx:DIR" or "npy:DIR"
  data_spec data_source = parse_data_spec("synthetic"); ///< `data` parsed: format and directory
  bool shuffle = true; ///< shuffle the training samples every epoch (--no-shuffle: file order)
  bool eval = false;
  bool normalize = false;
  std::string save_program; ///< directory; empty: do not save
  std::string metrics;      ///< JSON file; empty: do not write
  executor_choice executor = executor_choice::actor; ///< --executor actor|reference
  std::vector<place> places = {place::cpu(0)}; ///< data-parallel replicas; cpu:0 with reference
  int threads = 1;            ///< CAF scheduler workers of the actor executor; 1 with reference
  sync_mode sync = sync_mode::event; ///< how readers on another stream wait: --sync event|wait
  build_strategy::reduce_mode reduce = build_strategy::reduce_mode::all_reduce; ///< --reduce allreduce|reduce
  double fuse_allreduce_mb = 0;     ///< all-reduce bucket size in MiB; 0: grouped by allreduce_groups
  /// --allreduce-groups layer|gradient: without buckets, one all-reduce per layer or per gradient.
  build_strategy::all_reduce_grouping allreduce_groups = build_strategy::all_reduce_grouping::per_layer;
  sparse_exchange sparse_exchange_mode = sparse_exchange::automatic; ///< --sparse-exchange auto|sparse|dense
  int blas_threads = 1;            ///< OpenBLAS threads per GEMM call
  /// The largest tensor a program may declare or infer (validate_program's limit).
  std::int64_t max_tensor_bytes = default_max_tensor_bytes();
  bool check_nan_inf = false; ///< check every op's FP32 outputs (execution_strategy)
  bool cuda_graphs = false;   ///< steps as CUDA graphs (execution_strategy)
  place_pinning pin_places = place_pinning::when_full; ///< CPU places' device threads on cores of their own (execution_strategy)
  bool overlap_steps = true; ///< a step's tail overlaps the next step (execution_strategy)
  bool actor_per_op = false;  ///< no firing groups: an actor message per op (execution_strategy)
  bool sync_batch_norm = false; ///< batch statistics over every place (build_strategy)
  /// Seconds without progress after which a step stalls (execution_strategy); 0: off.
  double stall_timeout = default_stall_timeout_s;
  stall_action on_stall = stall_action::fail; ///< --on-stall fail|report
  std::string dot; ///< file for the training SSA graph; empty: do not write
  std::string trace; ///< Chrome trace file of the training steps' op firings; empty: none
  std::uint64_t trace_first = 1; ///< first training step --trace / --check-hazards record
  std::uint64_t trace_last = std::numeric_limits<std::uint64_t>::max(); ///< last, inclusive
  bool check_hazards = false; ///< check the recorded firings against the SSA graph
  std::string load_params; ///< persistables loaded after the startup program; empty: none
  std::string save_params; ///< checkpoint directory (persistables + checkpoint.json); empty: none
  std::int64_t save_every = 0; ///< also save the checkpoint every this many steps; 0: at the end
  std::int64_t log_every = 0; ///< a progress line every this many steps; 0: every 10 s
  bool infer = false;      ///< run the inference model `model` instead of training
  std::string params;      ///< the inference model's parameters (with infer)
  std::string output;      ///< directory of the fetch targets' .npy files (with infer)
  int nnodes = 1;          ///< processes in the training job (--nnodes, PADDLE_TRAINERS_NUM)
  int node_rank = 0;       ///< this process's rank among them, 0..nnodes-1
  std::string master_host; ///< where rank 0 waits for the others; set when nnodes > 1
  int master_port = 0;
  double peer_timeout = 10; ///< seconds of silence after which a peer counts as lost
  /// Which backend runs the CPU places' collectives across processes (process_backend.hpp).
  std::string collective_backend = default_process_backend;
  /// The job's secret (--job-token-file, $PE_ACTOR_JOB_TOKEN); empty: an open job. Never
  /// echoed (to_json says only whether there is one).
  std::string job_token;
  /// --tls-cert, --tls-key, --tls-ca: mutual TLS between the processes when given.
  tls_files tls;

  /// fuse_allreduce_mb in bytes (build_strategy::fuse_all_reduce_bytes).
  std::int64_t fuse_allreduce_bytes() const {
    return static_cast<std::int64_t>(fuse_allreduce_mb * 1024 * 1024);
  }

  /// True when `model` names a built-in model (mlp, cnn) rather than a program file.
  bool builtin_model() const { return model == "mlp" || model == "cnn"; }
  bool actor() const { return executor == executor_choice::actor; }
  /// "cpu:2": the places as --places writes them.
  std::string places_text() const;
  /// True when the training steps' op firings are recorded (--trace or --check-hazards).
  bool tracing() const { return !trace.empty() || check_hazards; }
  /// True when this process is one of several training together (nnodes > 1).
  bool multi_process() const { return nnodes > 1; }
};

/// Parses the command line. Prints the help text to `help_out` and returns nullopt for
/// --help; throws pe::error naming the flag for anything unknown, malformed or inconsistent.
/// The machine-dependent defaults are resolved here: the actor executor's places come from
/// the environment's CPU_NUM or else the core count, its threads from the core count. The
/// multi-process settings come from the flags or Paddle's launch environment (see
/// resolve_launch).
std::optional<run_options> parse_options(int argc, const char* const* argv, std::ostream& help_out);

/// The options as the metrics file's "config" object echoes them.
nlohmann::json to_json(const run_options& options);

} // namespace pe
