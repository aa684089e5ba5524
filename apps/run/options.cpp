#include "apps/run/options.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ostream>
#include <sstream>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>

#include <boost/program_options.hpp>

#include "apps/run/gpu_places.hpp"
#include "apps/run/job_token.hpp"
#include "apps/run/launch_options.hpp"
#include "collectives/process_backend.hpp"
#include "devices/device.hpp"
#include "devices/gpu_runtime.hpp"
#include "core/error.hpp"
#include "core/place_list.hpp"
#include "graph/models/cnn.hpp"
#include "graph/optimizer.hpp"

namespace po = boost::program_options;

namespace pe {

namespace {

int core_count() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

/// `text` as a positive int, or nullopt when it is anything else.
std::optional<int> positive_int(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value <= 0)
    return std::nullopt;
  return value;
}

/// "256,128" -> {256, 128}; every width must be a positive integer.
std::vector<int> parse_widths(const std::string& text) {
  std::vector<int> widths;
  std::string_view rest = text;
  while (true) {
    auto comma = rest.find(',');
    auto width = positive_int(rest.substr(0, comma));
    if (!width)
      throw error("--hidden: expected comma-separated positive widths such as 256,128, got '" +
                  text + "'");
    widths.push_back(*width);
    if (comma == std::string_view::npos)
      return widths;
    rest.remove_prefix(comma + 1);
  }
}

/// --places: cpu:N, the GPU forms or a defined kind's (core/place_list.hpp); only a list on
/// numbered devices asks their runtime how many there are.
std::vector<place> parse_places(const std::string& text) {
  const place_list list = parse_place_list(text);
  if (list.type.form() == place_form::replicas) return list_places(list, text, device_inventory{});
  return list_places(list, text, device_inventory_of(list.type));
}

/// The actor executor's places when --places is not given: CPU_NUM (as Paddle reads it),
/// else one per core.
std::vector<place> default_places() {
  const char* cpu_num = std::getenv("CPU_NUM");
  if (cpu_num == nullptr)
    return make_cpu_places(core_count());
  auto count = positive_int(cpu_num);
  if (!count)
    throw error(std::string("CPU_NUM=") + cpu_num +
                " in the environment: expected a positive number of CPU places");
  return make_cpu_places(*count);
}

/// "A:B" -> the training steps A..B (inclusive, 1-based) that --trace-steps selects.
std::pair<std::uint64_t, std::uint64_t> parse_step_range(const std::string& text) {
  auto number = [](std::string_view digits) -> std::optional<std::uint64_t> {
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size() || value == 0)
      return std::nullopt;
    return value;
  };
  std::string_view whole = text;
  auto colon = whole.find(':');
  auto first = colon == std::string_view::npos ? std::nullopt : number(whole.substr(0, colon));
  auto last = colon == std::string_view::npos ? std::nullopt : number(whole.substr(colon + 1));
  if (!first || !last)
    throw error("--trace-steps: expected A:B with steps 1 <= A <= B, got '" + text + "'");
  if (*first > *last)
    throw error("--trace-steps " + text + ": the first step is after the last");
  return {*first, *last};
}

/// A seed is an unsigned 64-bit integer; "-1" is rejected rather than wrapped around.
std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t seed = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw error("--seed: expected an unsigned 64-bit integer, got '" + text + "'");
  return seed;
}

/// --lr's help: each optimizer's default rate, from their registry.
std::string lr_help() {
  std::string help = "learning rate of a built-in model (default:";
  for (const auto& k : optimizer_kinds()) {
    std::ostringstream rate;
    rate << k.default_learning_rate;
    help += " " + rate.str() + " for " + k.name + ",";
  }
  help.back() = ')';
  return help;
}

/// --optimizer's help: the optimizers, from their registry.
std::string optimizer_help() {
  std::string help = "optimizer of the built-in model:";
  for (const auto& k : optimizer_kinds()) help += " " + k.name + " (" + k.about + ") |";
  help.pop_back();
  help.pop_back();
  return help;
}

/// --data's help: the formats this build has, from their registry, and what the built-in
/// ones read.
std::string data_help() {
  std::string help = "one of " + data_spec_forms() + ":";
  for (const auto& f : data_formats()) help += " " + f.name + (f.takes_dir ? ":DIR" : "") + ", " + f.about + ";";
  help.back() = '.';
  return help +
         " synthetic and idx:DIR feed an FP32 image and an INT64 label, each to the program's "
         "one feed of that dtype (a program with other feeds needs npy:DIR); idx:DIR reads "
         "train-images-idx3-ubyte, train-labels-idx1-ubyte and, for --eval, "
         "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each plain or .gz (images feed any "
         "[-1, ...] image variable whose dims multiply to rows x cols, e.g. [-1, 1, 28, 28]); "
         "npy:DIR holds DIR/<name>.npy for every feed of the program, whatever its name and "
         "dtype (the mlp's: image.npy, label.npy), in the dtype and non-batch dims the program "
         "declares, all with the same rows along dim 0, and for --eval the same files in "
         "DIR/test/; in a file name, a feed name's bytes other than letters, digits, _ - . @ "
         "are written %XX (a/b -> a%2Fb.npy); samples are shuffled every epoch, the same "
         "rows of every feed (see --no-shuffle)";
}

/// --collective-backend's help: the backends this build has, from their registry.
std::string backend_help() {
  std::string help = "with --nnodes N > 1 and CPU places: what runs the collectives across the "
                     "processes (the same on every process):";
  for (const auto& b : process_backends()) help += " " + b.name + ", " + b.about + ";";
  help.back() = '.';
  return help + " GPU places across processes use NCCL";
}

po::options_description describe() {
  const auto cores = std::to_string(core_count());
  po::options_description d(
    "Usage: pe-actor-run [options]\n"
    "Trains a Paddle ProgramDesc (or a built-in MLP or CNN) data-parallel on CPU or GPU places\n"
    "with the actor executor (or on one place with the reference executor), or with --infer\n"
    "runs an inference model on .npy inputs. An error prints one line\n"
    "starting with \"pe-actor-run: error:\" and exits with status 2; hazards that\n"
    "--check-hazards finds exit with status 3. The first Ctrl-C (SIGINT) or SIGTERM ends\n"
    "training after the step in progress, writes the metrics, the summary and the\n"
    "--save-params checkpoint (no --eval) and exits with status 130 or 143; a second one\n"
    "exits at once.\n\nOptions");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("model", po::value<std::string>()->value_name("mlp|cnn|PATH")->default_value("mlp"),
     "'mlp' for the built-in MLP (input width follows the data, 10 classes), 'cnn' for the "
     "built-in LeNet-like CNN on 28x28 images (2 x conv 5x5-batch_norm-relu-max pool with 32 "
     "and 64 channels, fc "
     "120-84-10), or the PATH "
     "of a binary or text ProgramDesc training program (needs --startup); a loaded program "
     "keeps its own optimizer and is fed by --data (synthetic and idx:DIR feed a program "
     "with one FP32 image and one INT64 label feed; npy:DIR feeds any feeds). With --infer: "
     "the inference program (.pdmodel)")
    ("startup", po::value<std::string>()->value_name("PATH"),
     "PATH of the startup program (parameter initialisation) of a --model PATH; required "
     "with it, invalid with mlp and cnn")
    ("hidden", po::value<std::string>()->value_name("W1,W2,..."),
     "hidden fully connected widths of the built-in model, comma-separated (default: 256,128 "
     "for mlp, 120,84 for cnn)")
    ("steps", po::value<std::int64_t>()->value_name("N")->default_value(200),
     "training steps (mini-batches)")
    ("epochs", po::value<std::int64_t>()->value_name("E"),
     "train for E passes over the training set instead of --steps (giving both is an error)")
    ("batch-size", po::value<std::int64_t>()->value_name("B")->default_value(64),
     "global mini-batch size, split across the places (the first B % N places get one "
     "more row); the last batch of an epoch keeps the remainder")
    ("lr", po::value<double>()->value_name("RATE"), lr_help().c_str())
    ("optimizer", po::value<std::string>()->value_name("NAME")->default_value("sgd"),
     optimizer_help().c_str())
    ("seed", po::value<std::string>()->value_name("S")->default_value("1"),
     "seed of parameter initialisation, synthetic data and shuffling")
    ("data", po::value<std::string>()->value_name("SOURCE")->default_value("synthetic"),
     data_help().c_str())
    ("normalize", po::bool_switch(), "scale idx pixels from 0..255 to 0..1")
    ("no-shuffle", po::bool_switch(),
     "serve the training samples in their order in the data every epoch instead of shuffling "
     "them: each batch is then split over the places as Paddle's ParallelExecutor splits the "
     "array it is fed (place p gets the p-th contiguous rows), which matters to batch_norm, "
     "whose statistics are each place's own")
    ("eval", po::bool_switch(),
     "after training, report the test set's mean loss and accuracy (the program's accuracy "
     "op), printed and in the metrics")
    ("save-program", po::value<std::string>()->value_name("DIR"),
     "write the startup and main programs that run to DIR/startup.pb, DIR/main.pb (binary) "
     "and DIR/startup.pbtxt, DIR/main.pbtxt (text)")
    ("metrics", po::value<std::string>()->value_name("FILE"),
     "write a JSON object to FILE: \"steps\" [{step, loss, samples_per_sec (from step 2)}], "
     "\"samples_per_sec\" over steps 2..N (step 1 is warm-up and excluded), \"wall_s\" "
     "(training loop), \"peak_rss_mb\", \"eval\" {loss, accuracy} with --eval, the effective "
     "\"places\" (count), \"executor\", \"threads\" and \"reduce\", and \"config\"")
    ("log-every", po::value<std::int64_t>()->value_name("N"),
     "progress of training: on a terminal one line is rewritten in place (at most 10 times "
     "a second): step s/S, the step's loss, the smoothed loss, epoch k/E with --epochs, "
     "samples/s and the ETA (over the steps after the first, the warm-up), elapsed time. "
     "Elsewhere (a pipe, a file, pe-actor-launch) the same as plain lines: without "
     "--log-every, the first step, then one whenever 10 s have passed since the last, and "
     "the last step; with --log-every N (N >= 1; 0 is refused), every N-th step plus the "
     "first and the last, and on a terminal every N-th step's line stays on the screen. A "
     "step whose loss is not finite is always shown")
    ("executor", po::value<std::string>()->value_name("NAME")->default_value("actor"),
     "actor: the parallel executor, every op an actor, the program replicated on each place "
     "and the gradients combined across places; reference: ops in program order on the "
     "calling thread, one place only")
    ("places", po::value<std::string>()->value_name("cpu:N|gpu:..."),
     ("places to train on (data parallelism): cpu:N, N CPU places; default with the actor "
      "executor: cpu:$CPU_NUM when CPU_NUM is set, else one per core (here cpu:" + cores +
      "); with reference: cpu:1, the only choice. " + gpu_places_help()).c_str())
    ("threads", po::value<int>()->value_name("T"),
     "worker threads of the actor executor's CAF scheduler, shared by all places (default "
     "1: op actors only enqueue kernels on the places' device threads, and one worker keeps "
     "up with them; more workers wake each other for every message)")
    ("reduce", po::value<std::string>()->value_name("MODE")->default_value("allreduce"),
     "how the actor executor combines gradients: allreduce (every place sums all gradients "
     "and runs the optimizer) or reduce (each parameter's owner place sums its gradient, "
     "updates it and broadcasts it; a sparse table's owner broadcasts only the rows the step "
     "touched when its optimizer changes no others: sgd, lazy adam)")
    ("sparse-exchange", po::value<std::string>()->value_name("MODE")->default_value("auto"),
     "how places and processes exchange a sparse (SELECTED_ROWS) gradient, such as an "
     "Embedding's with sparse=True: sparse (gather every place's rows and values), dense "
     "(all-reduce the whole table, then hand the optimizer the touched rows with their sums) "
     "or auto (per step, dense when the gathered rows would move more bytes than the table: "
     "rows x (4 x width + 8) over every place against height x (width + 1) x 4). Every "
     "place takes the same choice; the trace names an all_gather that ran densely "
     "all_reduce (dense fallback). The losses agree within float rounding either way")
    ("sync", po::value<std::string>()->value_name("MODE")->default_value("event"),
     "how an op whose input was written on another stream of a place (a collective on the "
     "communication stream reading a gradient, an optimizer reading an all-reduced "
     "gradient, a fetch on the copy stream) waits for it: event (the reader's stream waits "
     "on the writer's event, the op actor goes on at once) or wait (the op actor blocks "
     "until the writer's work has run, then enqueues)")
    ("fuse-allreduce-mb", po::value<double>()->value_name("X")->default_value(0, "0"),
     "all-reduce gradients in buckets of at most X MiB, one collective per bucket; 0: grouped "
     "as --allreduce-groups says. Across processes a bucket saves a round trip per gradient "
     "(the MLP with 4 MiB buckets: 12-22% more samples/s on 2 processes, measured). Ignored with "
     "--reduce reduce")
    ("allreduce-groups", po::value<std::string>()->value_name("MODE")->default_value("layer"),
     "without --fuse-allreduce-mb, which gradients share an all-reduce: layer (those of "
     "parameters whose names agree before the first '.', fc_0.w_0 and fc_0.b_0, produced one "
     "after the other: Paddle 2's default fuse_all_reduce_ops grouping) or gradient (one "
     "all-reduce each, Paddle 1's default). The sums are the same either way; fewer "
     "collectives mean fewer rendezvous a step. Ignored with --reduce reduce")
    ("sync-batch-norm", po::bool_switch(),
     "Paddle's BuildStrategy.sync_batch_norm: batch_norm in training takes its batch mean and "
     "variance over every place and process (an all-reduce of per-channel sums before each "
     "normalisation and its grad), so N places normalise as one place with the global batch "
     "would. Off (the default), each place normalises its own rows, as Paddle's "
     "ParallelExecutor does. A program with Paddle's sync_batch_norm ops shares them either way")
    ("blas-threads", po::value<int>()->value_name("N")->default_value(1),
     "threads per GEMM (OpenBLAS) and per convolution, pooling or batch norm (oneDNN) call, "
     "for either executor. Default 1, also what the actor "
     "executor sets on its own: its places and threads already occupy the cores, and BLAS "
     "threads on top oversubscribe them; raise it when places leave cores idle (one place, "
     "or --executor reference). OPENBLAS_NUM_THREADS is not consulted")
    ("max-tensor-bytes", po::value<std::int64_t>()->value_name("N")
         ->default_value(default_max_tensor_bytes(), "half the physical memory"),
     ("the largest tensor, in bytes, a program (or an inference model) may declare or infer "
      "from its known dims; a larger one, or dims whose element count overflows, fails "
      "validation naming the op and variable (here " +
      std::to_string(default_max_tensor_bytes()) + ")").c_str())
    ("check-nan-inf", po::bool_switch(),
     "Paddle's FLAGS_check_nan_inf: after every op's kernel, check its FP32 outputs and fail "
     "the step naming the first op, place and variable holding NaN or an infinity (for "
     "either executor; slows every step, off by default). Without it a non-finite loss "
     "still stops training, naming the step")
    ("cuda-graphs", po::bool_switch(),
     "GPU places of one GPU: after two steps of the same batch shapes, capture a step as a "
     "CUDA graph and replay it for every later step of those shapes: one launch per step "
     "instead of one per kernel, for the places together. Steps of other shapes and traced "
     "steps run as usual. A program whose kernels need the host during a step (dropout, "
     "control flow) is not captured: a note on stderr says why and training goes on without "
     "graphs. Refused with CPU places, several processes, --sync wait or --check-nan-inf")
    ("pin-places", po::value<std::string>()->value_name("WHEN")->default_value("auto")->implicit_value("on"),
     "pin each CPU place's device thread (the thread that runs its kernels) to a core of its "
     "own among the cores this process may use, round robin when the places outnumber them; "
     "with --nnodes, process rank r takes the cores after those of the ranks before it: auto "
     "(the default) where the job's places on this host are as many as those cores (this "
     "process's places, or every process's with the shm backend), on (also given alone), "
     "off. Pinned, the scheduler no longer puts two places on one core while the other "
     "idles; two jobs that both pin share the same cores. No effect on GPU places")
    ("no-overlap-steps", po::bool_switch(),
     "run every step whole: each step returns only once all of its work has run. By default "
     "on CPU places of one process a step returns once its loss and every op reading the "
     "batch have run, and the rest of it (the optimizer's last updates) overlaps the next "
     "step's start, with the same results bit for bit")
    ("actor-per-op", po::bool_switch(),
     "fire every op by a message to its own actor, a message per edge. By default an op "
     "whose inputs all come from one firing group on its own place and stream is enqueued by "
     "that group's firing (the same work in the same stream order, fewer messages), an edge "
     "that other edges imply sends no message, a group waiting for one message is fired by "
     "its sender, and one hearing only from the step's thread is fired by it; this turns all "
     "of these off, for comparing or for each op's message in a trace")
    ("stall-timeout", po::value<double>()->value_name("SECONDS")->default_value(default_stall_timeout_s, "300"),
     "a training step of the actor executor that makes no progress for this long (no op "
     "fires, no kernel, transfer or stream item finishes, no place joins a collective) "
     "stalls: a report on stderr says which ops have not run, what each waits for, each "
     "collective's places that joined and those missing, each stream's queue, and one "
     "chain from a stuck op back to the root cause; then --on-stall decides. 0 turns the "
     "watch off. The default, 300, is far above any healthy gap (one kernel, even a large "
     "one on a slow CPU place, takes seconds) and still ends a hung job within minutes. "
     "SIGUSR1 prints the same report for the running step at any time, without stopping it")
    ("on-stall", po::value<std::string>()->value_name("ACTION")->default_value("fail"),
     "what a stalled step does after its report: fail (the step fails with an error naming "
     "the root cause; the run exits with status 2) or report (it keeps waiting, and reports "
     "again after each further --stall-timeout without progress)")
    ("dot", po::value<std::string>()->value_name("FILE"),
     "after the first step, write the actor executor's SSA graph of the training program "
     "(ops and variable versions on every place, collectives) to FILE as Graphviz DOT")
    ("trace", po::value<std::string>()->value_name("FILE"),
     "record the actor executor's op firings during training and write them to FILE as a "
     "Chrome Trace Event JSON file (open it in Perfetto or chrome://tracing, or read it with "
     "pe-actor-trace): a track per place and one for the collectives, a span per firing, "
     "an arrow per message (with --nnodes, one file per process: see --nnodes)")
    ("trace-steps", po::value<std::string>()->value_name("A:B"),
     "record only training steps A..B (inclusive, counted from 1) for --trace and "
     "--check-hazards; default: every step")
    ("check-hazards", po::bool_switch(),
     "record the actor executor's op firings like --trace and, after training, check them "
     "against the SSA graph: every op fired once per step, no read before its write "
     "finished, no write before the reads of the previous version finished. Prints "
     "\"hazard check: N steps, M firings, no violations\", or each violation and then "
     "exits with status 3")
    ("load-params", po::value<std::string>()->value_name("PATH"),
     "after the startup program, load the persistables from PATH: a directory with one file "
     "per variable (Paddle's save_vars / save_persistables) or one combined file (save_combine, "
     ".pdiparams, matched to the program's variables by count in sorted-name order). It holds "
     "every persistable, or only the parameters the forward ops read (the others keep their "
     "startup values); each must have the dtype and dims the program declares. A --save-params "
     "checkpoint (PATH/checkpoint.json) resumes its run: training goes on from the step after "
     "it with the data where it was, so the losses continue the interrupted run's; --steps and "
     "--epochs stay the total. A checkpoint of another model, batch size, seed or data is "
     "refused")
    ("save-params", po::value<std::string>()->value_name("DIR"),
     "after training (also when a first Ctrl-C or SIGTERM ends it early) write a checkpoint "
     "to DIR: every persistable (parameters, learning rate, optimizer state) as one file per "
     "variable in Paddle's format (paddle.static.load_vars and paddle.static.load read it), "
     "and DIR/checkpoint.json with the step, the position in the data and what a resumed "
     "run must match (model, batch size, seed, data). The checkpoint replaces DIR in one "
     "rename, so an interrupted save leaves the previous one whole; DIR must be new, empty "
     "or an earlier checkpoint of the program, and is checked writable before training")
    ("save-every", po::value<std::int64_t>()->value_name("K"),
     "with --save-params: also write the checkpoint after every K-th step (counted from the "
     "first run's start)")
    ("infer", po::bool_switch(),
     "run an inference model instead of training: --model PATH is its program (a .pdmodel; "
     "its feed and fetch ops name the inputs and the outputs), --params its parameters, "
     "--data npy:DIR holds DIR/<feed name>.npy for every feed (rows along dim 0, names "
     "mapped as for training); runs "
     "--batch-size rows at a time (the last batch may be partial) split across --places and "
     "writes every fetch target, all rows in order, to --output DIR/<fetch name>.npy")
    ("params", po::value<std::string>()->value_name("PATH"),
     "with --infer: the model's parameters, a combined file (.pdiparams) or a directory with "
     "one file per variable")
    ("output", po::value<std::string>()->value_name("DIR"),
     "with --infer: the directory (created) for the fetch targets' .npy files")
    ("nnodes", po::value<int>()->value_name("N"),
     "train data-parallel over N processes, on one machine or several (default 1, or "
     "PADDLE_TRAINERS_NUM); each process trains on its own --places, so the world size is N "
     "x local places, and --batch-size stays the global batch, of which each process copies "
     "only its rows. Every process runs the same flags (compared when they meet); rank 0 "
     "prints the steps and writes --metrics, --save-params, --dot and --save-program; each "
     "process writes its own --trace, FILE with .rankR before the extension "
     "(pe-actor-trace merge joins them). pe-actor-launch starts N local processes")
    ("node-rank", po::value<int>()->value_name("R"),
     "this process's rank, 0..N-1 (default 0, or PADDLE_TRAINER_ID); rank 0 is the master")
    ("master", po::value<std::string>()->value_name("HOST:PORT"),
     "with --nnodes N > 1: the address where rank 0 listens and the other processes join "
     "(required; default: the first of PADDLE_TRAINER_ENDPOINTS, a comma-separated "
     "HOST:PORT list in rank order, of which PADDLE_CURRENT_ENDPOINT must be this rank's)")
    ("peer-timeout", po::value<double>()->value_name("SECONDS")->default_value(10, "10"),
     "with --nnodes N > 1: a process that dies, stops or loses its connection fails the "
     "step on every other process, with an error naming its rank, within this time (with "
     "--collective-backend gloo, also the longest one Gloo transfer may take)")
    ("collective-backend", po::value<std::string>()->value_name("NAME")->default_value(default_process_backend),
     backend_help().c_str())
    ("job-token-file", po::value<std::string>()->value_name("FILE"),
     "with --nnodes N > 1: the job's secret (at least 16 bytes, e.g. `openssl rand -hex 32`; "
     "the file readable by its owner alone). Every process must prove that it holds the same "
     "one to join (challenge and response, HMAC-SHA256; the token never crosses the wire); "
     "a process that cannot is refused and the job goes on. Default: $PE_ACTOR_JOB_TOKEN, "
     "which pe-actor-launch sets to a fresh token for the processes it starts; with neither, "
     "anyone who can reach --master and knows the program may join (a warning says so when "
     "--master is not a loopback address)")
    ("tls-cert", po::value<std::string>()->value_name("PEM"),
     "with --nnodes N > 1: this process's certificate; with --tls-key and --tls-ca, every "
     "connection between the job's processes is mutual TLS (CAF's OpenSSL module): tensors, "
     "parameters and handshakes are encrypted, and a peer whose certificate --tls-ca did not "
     "sign is refused (every packet then goes through these connections, none over the "
     "plain-TCP data links). Without them, plain TCP. Not with --collective-backend gloo or GPU "
     "places, whose tensors travel on connections of their own")
    ("tls-key", po::value<std::string>()->value_name("PEM"),
     "with --tls-cert: its private key (PEM, unencrypted)")
    ("tls-ca", po::value<std::string>()->value_name("PEM"),
     "with --tls-cert: the job's CA certificate, which must have signed every process's "
     "certificate");
  // clang-format on
  return d;
}

template <class T>
T take(const po::variables_map& vm, const char* name) {
  return vm[name].as<T>();
}

bool given(const po::variables_map& vm, const char* name) {
  return vm.count(name) != 0 && !vm[name].defaulted();
}

void require_positive(std::int64_t value, const char* flag) {
  if (value <= 0)
    throw error(std::string("--") + flag + " must be positive, got " + std::to_string(value));
}

/// Sets and checks the executor, its places and threads, and the gradient strategy.
void interpret_executor(const po::variables_map& vm, run_options& o) {
  o.executor = parse_choice<executor_choice>("--executor", take<std::string>(vm, "executor"));
  o.reduce = parse_choice<build_strategy::reduce_mode>("--reduce", take<std::string>(vm, "reduce"));
  o.sparse_exchange_mode = parse_choice<sparse_exchange>("--sparse-exchange", take<std::string>(vm, "sparse-exchange"));
  o.allreduce_groups = parse_choice<build_strategy::all_reduce_grouping>("--allreduce-groups",
                                                                         take<std::string>(vm, "allreduce-groups"));
  if (!(o.fuse_allreduce_mb >= 0 && std::isfinite(o.fuse_allreduce_mb)))
    throw error("--fuse-allreduce-mb must be 0 (off) or a positive size in MiB, got " +
                std::to_string(o.fuse_allreduce_mb));
  o.sync = parse_choice<sync_mode>("--sync", take<std::string>(vm, "sync"));
  std::optional<std::vector<place>> places;
  if (vm.count("places"))
    places = parse_places(take<std::string>(vm, "places"));

  if (o.actor()) {
    o.places = places ? *places : default_places();
    o.threads = vm.count("threads") ? take<int>(vm, "threads") : 1;
    require_positive(o.threads, "threads");
    return;
  }
  o.places = places.value_or(make_cpu_places(1));
  if (o.places.size() != 1)
    throw error("--executor reference runs on one place, got --places " + o.places_text() +
                "; use --executor actor for several places");
  if (vm.count("threads") || given(vm, "reduce") || given(vm, "fuse-allreduce-mb") ||
      given(vm, "allreduce-groups") || given(vm, "sparse-exchange") || given(vm, "sync") || vm.count("dot") || given(vm, "stall-timeout") ||
      given(vm, "on-stall") || given(vm, "cuda-graphs") || given(vm, "sync-batch-norm") || given(vm, "pin-places") ||
      given(vm, "actor-per-op") || given(vm, "no-overlap-steps"))
    throw error("--threads, --reduce, --fuse-allreduce-mb, --allreduce-groups, --sparse-exchange, --sync, --dot, --stall-timeout, --on-stall, --cuda-graphs, --sync-batch-norm, --pin-places, --actor-per-op and --no-overlap-steps configure the "
                "actor executor, not --executor reference");
  if (o.tracing())
    throw error("--trace and --check-hazards record the actor executor's op firings; "
                "--executor reference has no actors to trace");
  o.threads = 1; // the calling thread
}

/// Sets and checks --load-params, --save-params and the inference run's flags.
void interpret_params(const po::variables_map& vm, run_options& o) {
  if (vm.count("load-params")) o.load_params = take<std::string>(vm, "load-params");
  if (vm.count("save-params")) o.save_params = take<std::string>(vm, "save-params");
  if (vm.count("params")) o.params = take<std::string>(vm, "params");
  if (vm.count("output")) o.output = take<std::string>(vm, "output");
  o.infer = take<bool>(vm, "infer");
  if (vm.count("save-every")) {
    o.save_every = take<std::int64_t>(vm, "save-every");
    require_positive(o.save_every, "save-every");
    if (o.save_params.empty())
      throw error("--save-every " + std::to_string(o.save_every) +
                  " needs --save-params DIR, the checkpoint directory");
  }
  if (!o.infer) {
    if (!o.params.empty() || !o.output.empty())
      throw error("--params and --output are for --infer; to train from saved parameters "
                  "use --load-params");
    return;
  }
  if (o.builtin_model())
    throw error("--infer needs --model PATH, the inference program (.pdmodel)");
  if (o.params.empty() || o.output.empty())
    throw error("--infer needs --params PATH (the model's parameters) and --output DIR");
  if (o.data_source.format.name != "npy")
    throw error("--infer reads its inputs from --data npy:DIR, got '" + o.data + "'");
  for (const char* flag : {"startup", "steps", "epochs", "eval", "load-params", "save-params",
                           "save-every", "save-program", "metrics", "dot", "trace",
                           "check-hazards", "log-every"})
    if (given(vm, flag))
      throw error(std::string("--") + flag + " is for training, not --infer");
}

/// Sets and checks what the training steps' firings are recorded for.
void interpret_tracing(const po::variables_map& vm, run_options& o) {
  if (vm.count("trace"))
    o.trace = take<std::string>(vm, "trace");
  o.check_hazards = take<bool>(vm, "check-hazards");
  if (!vm.count("trace-steps"))
    return;
  if (!o.tracing())
    throw error("--trace-steps selects the steps that --trace or --check-hazards record; "
                "give one of them");
  std::tie(o.trace_first, o.trace_last) = parse_step_range(take<std::string>(vm, "trace-steps"));
}

/// Sets and checks this process's place in a multi-process job: --nnodes, --node-rank,
/// --master (or Paddle's launch environment) and --peer-timeout.
void interpret_launch(const po::variables_map& vm, run_options& o) {
  launch_flags flags;
  if (vm.count("nnodes")) flags.nnodes = take<int>(vm, "nnodes");
  if (vm.count("node-rank")) flags.node_rank = take<int>(vm, "node-rank");
  if (vm.count("master")) flags.master = take<std::string>(vm, "master");
  const launch_config launch = resolve_launch(flags);
  o.nnodes = launch.nnodes;
  o.node_rank = launch.node_rank;
  o.master_host = launch.master_host;
  o.master_port = launch.master_port;
  o.peer_timeout = take<double>(vm, "peer-timeout");
  o.collective_backend = take<std::string>(vm, "collective-backend");
  try {
    find_process_backend(o.collective_backend);
  } catch (const error& e) {
    throw error(std::string("--collective-backend: ") + e.what());
  }
  if (o.collective_backend != default_process_backend && o.places.front().type != place::kind::cpu)
    throw error("--collective-backend " + o.collective_backend +
                " runs CPU places; GPU places across processes use NCCL");
  if (!(o.peer_timeout > 0 && std::isfinite(o.peer_timeout)))
    throw error("--peer-timeout must be a positive number of seconds, got " +
                std::to_string(o.peer_timeout));
  if (vm.count("tls-cert")) o.tls.certificate = take<std::string>(vm, "tls-cert");
  if (vm.count("tls-key")) o.tls.key = take<std::string>(vm, "tls-key");
  if (vm.count("tls-ca")) o.tls.ca = take<std::string>(vm, "tls-ca");
  if (!o.multi_process()) {
    if (vm.count("job-token-file") || o.tls.any())
      throw error(std::string(vm.count("job-token-file") ? "--job-token-file" : "--tls-cert/--tls-key/--tls-ca") +
                  " protects the connections between the processes of a job; this run has one "
                  "process (--nnodes 1)");
    return;
  }
  o.job_token = read_job_token(vm.count("job-token-file")
                                   ? std::optional<std::string>(take<std::string>(vm, "job-token-file"))
                                   : std::nullopt);
  if (o.tls.any()) {
    check_tls_files(o.tls);
    if (!find_process_backend(o.collective_backend).tls_covers)
      throw error("--tls-cert encrypts the CAF connections between the processes; --collective-backend " +
                  o.collective_backend + " sends the tensors over connections of its own, which "
                  "TLS would not cover: use --collective-backend " + default_process_backend);
    if (o.places.front().type != place::kind::cpu)
      throw error("--tls-cert encrypts the CAF connections between the processes; GPU places "
                  "across processes send their tensors through NCCL, which TLS would not cover");
  }
  if (o.infer)
    throw error("--infer runs in one process; --nnodes " + std::to_string(o.nnodes) +
                " is for training");
  if (!o.actor())
    throw error("--executor reference runs in one process; --nnodes " +
                std::to_string(o.nnodes) + " trains with the actor executor");
}

run_options interpret(const po::variables_map& vm) {
  run_options o;
  o.model = take<std::string>(vm, "model");
  if (vm.count("startup"))
    o.startup = take<std::string>(vm, "startup");
  if (vm.count("hidden")) o.hidden = parse_widths(take<std::string>(vm, "hidden"));
  o.steps = take<std::int64_t>(vm, "steps");
  o.batch_size = take<std::int64_t>(vm, "batch-size");
  o.optimizer = take<std::string>(vm, "optimizer");
  o.seed = parse_seed(take<std::string>(vm, "seed"));
  o.data = take<std::string>(vm, "data");
  o.shuffle = !take<bool>(vm, "no-shuffle");
  try {
    o.data_source = parse_data_spec(o.data);
  } catch (const error& e) {
    throw error(std::string("--data: ") + e.what());
  }
  o.eval = take<bool>(vm, "eval");
  o.normalize = take<bool>(vm, "normalize");
  if (vm.count("save-program"))
    o.save_program = take<std::string>(vm, "save-program");
  if (vm.count("metrics"))
    o.metrics = take<std::string>(vm, "metrics");
  o.fuse_allreduce_mb = take<double>(vm, "fuse-allreduce-mb");
  o.blas_threads = take<int>(vm, "blas-threads");
  o.max_tensor_bytes = take<std::int64_t>(vm, "max-tensor-bytes");
  o.check_nan_inf = take<bool>(vm, "check-nan-inf");
  o.cuda_graphs = take<bool>(vm, "cuda-graphs");
  o.pin_places = parse_choice<place_pinning>("--pin-places", take<std::string>(vm, "pin-places"));
  o.actor_per_op = take<bool>(vm, "actor-per-op");
  o.overlap_steps = !take<bool>(vm, "no-overlap-steps");
  o.sync_batch_norm = take<bool>(vm, "sync-batch-norm");
  o.stall_timeout = take<double>(vm, "stall-timeout");
  if (!(o.stall_timeout >= 0 && std::isfinite(o.stall_timeout)))
    throw error("--stall-timeout must be 0 (off) or a positive number of seconds, got " +
                std::to_string(o.stall_timeout));
  o.on_stall = parse_choice<stall_action>("--on-stall", take<std::string>(vm, "on-stall"));
  if (vm.count("dot"))
    o.dot = take<std::string>(vm, "dot");
  if (vm.count("log-every")) {
    o.log_every = take<std::int64_t>(vm, "log-every");
    if (o.log_every < 1)
      throw error("--log-every must be at least 1 (a progress line every N steps), got " +
                  std::to_string(o.log_every) + "; without it, lines come every 10 s");
  }

  require_positive(o.steps, "steps");
  require_positive(o.batch_size, "batch-size");
  require_positive(o.blas_threads, "blas-threads");
  require_positive(o.max_tensor_bytes, "max-tensor-bytes");
  if (vm.count("epochs")) {
    if (given(vm, "steps"))
      throw error("--steps and --epochs both given; use one");
    o.epochs = take<std::int64_t>(vm, "epochs");
    require_positive(*o.epochs, "epochs");
  }
  double default_lr = 0;
  try {
    default_lr = find_optimizer(o.optimizer).default_learning_rate;
  } catch (const error& e) {
    throw error(std::string("--optimizer: ") + e.what());
  }
  o.learning_rate = vm.count("lr") ? take<double>(vm, "lr") : default_lr;
  if (!(o.learning_rate > 0))
    throw error("--lr must be positive, got " + std::to_string(o.learning_rate));

  if (o.builtin_model()) {
    if (!o.startup.empty())
      throw error("--startup is for a --model PATH; the " + o.model +
                  " builds its own startup program");
  } else {
    if (o.startup.empty() && !take<bool>(vm, "infer"))
      throw error("--model " + o.model + " needs --startup PATH (its startup program)");
    if (given(vm, "hidden") || given(vm, "optimizer") || vm.count("lr"))
      throw error("--hidden, --optimizer and --lr configure the built-in models; a loaded program "
                  "has its own layers and optimizer");
  }

  if (o.normalize && !o.data_source.format.pixels)
    throw error("--normalize scales idx pixels; it does not apply to --data " + o.data);
  interpret_params(vm, o);
  interpret_tracing(vm, o);
  interpret_executor(vm, o);
  interpret_launch(vm, o);
  return o;
}

} // namespace

std::optional<run_options> parse_options(int argc, const char* const* argv,
                                         std::ostream& help_out) {
  auto description = describe();
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv)
                .options(description)
                .positional({}) // no positional arguments: a stray word is an error
                .run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw error(e.what());
  }
  if (vm.count("help")) {
    help_out << description << '\n';
    return std::nullopt;
  }
  return interpret(vm);
}

std::string run_options::places_text() const {
  return place_list_text(places);
}

nlohmann::json to_json(const run_options& o) {
  nlohmann::json config = {
    {"model", o.model},
    {"batch_size", o.batch_size},
    {"seed", o.seed},
    {"data", o.data},
    {"eval", o.eval},
    {"normalize", o.normalize},
    {"places", o.places_text()},
    {"executor", spelling(o.executor)},
    {"threads", o.threads},
    {"reduce", spelling(o.reduce)},
    {"sparse_exchange", spelling(o.sparse_exchange_mode)},
    {"sync", spelling(o.sync)},
    {"fuse_allreduce_mb", o.fuse_allreduce_mb},
    {"allreduce_groups", spelling(o.allreduce_groups)},
    {"blas_threads", o.blas_threads},
    {"max_tensor_bytes", o.max_tensor_bytes},
    {"check_nan_inf", o.check_nan_inf},
    {"stall_timeout", o.stall_timeout},
    {"on_stall", spelling(o.on_stall)},
  };
  // Only when off: checkpoints of runs before the flag existed (shuffled) still resume.
  if (!o.shuffle)
    config["shuffle"] = false;
  if (o.builtin_model()) {
    config["hidden"] = !o.hidden.empty() ? o.hidden
                       : o.model == "cnn" ? cnn_config{}.fc
                                          : mlp_config{}.hidden;
    config["lr"] = o.learning_rate;
    config["optimizer"] = o.optimizer;
  } else {
    config["startup"] = o.startup;
  }
  if (o.epochs)
    config["epochs"] = *o.epochs;
  else
    config["steps"] = o.steps;
  if (!o.save_program.empty())
    config["save_program"] = o.save_program;
  if (!o.metrics.empty())
    config["metrics"] = o.metrics;
  if (!o.dot.empty())
    config["dot"] = o.dot;
  if (!o.trace.empty())
    config["trace"] = o.trace;
  if (o.tracing())
    config["trace_steps"] = o.trace_last == std::numeric_limits<std::uint64_t>::max()
                              ? std::string("all")
                              : std::to_string(o.trace_first) + ":" + std::to_string(o.trace_last);
  if (o.check_hazards)
    config["check_hazards"] = true;
  if (!o.load_params.empty())
    config["load_params"] = o.load_params;
  if (!o.save_params.empty())
    config["save_params"] = o.save_params;
  if (o.save_every > 0)
    config["save_every"] = o.save_every;
  if (o.log_every > 0)
    config["log_every"] = o.log_every;
  if (o.multi_process()) {
    config["nnodes"] = o.nnodes;
    config["node_rank"] = o.node_rank;
    config["master"] = endpoint{o.master_host, o.master_port}.text();
    config["peer_timeout"] = o.peer_timeout;
    config["collective_backend"] = o.collective_backend;
    config["job_token"] = !o.job_token.empty(); // whether there is one, never the secret
    config["tls"] = o.tls.any();
  }
  return config;
}

} // namespace pe
