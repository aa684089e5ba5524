// Sparse gradients at scale (issue 27): a bag-of-words classifier whose embedding is a
// 1,000,000 x 64 table (256 MB), fed 256 samples of 20 ids per place (uniform over the table),
// mean over the words, fc to 2 classes, softmax cross entropy, SGD. The same model with a
// sparse gradient (lookup_table_v2 is_sparse: SELECTED_ROWS, all_gather of the rows; the
// default --sparse-exchange auto keeps them sparse here) against a dense gradient (a 256 MB
// W@GRAD zeroed, written and all-reduced every step), on 2 places of one process and on 2
// processes of 1 place each (CAF over TCP on 127.0.0.1).
//
// Every configuration runs in processes of its own (forked before any thread starts), so that
// each reports its own peak RSS (getrusage). Per configuration: samples/s over the timed steps
// (after 2 warm-up steps), bytes exchanged per step, peak RSS. Bytes: across processes, the
// payload bytes each process sent per timed step (payload_bytes_sent: every collective's
// payloads, the gathered fetches; no packet headers); in one process, what the collective
// reads from the other place per step (computed: the gathered rows and their indices, or the
// dense table).
//
// Against PyTorch: bench/sparse_torch.py (the same model, nn.Embedding(sparse=True), DDP over
// gloo on 2 processes of one thread) under /usr/bin/python3 in the same run, compared with
// the 2-process configuration; its rows are left out, with a line on stderr, when it fails.
//
// Usage: sparse_bench [--steps=N] [--dense-steps=N] [--benchmark_* flags, ignored]
// Prints one markdown table (bench.sh's format) on stdout.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <utility>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "actors/parallel_executor.hpp"
#include "bench/baseline.hpp"
#include "bench/joined_processes.hpp"
#include "collectives/net/net_transport.hpp"
#include "collectives/net/process_group.hpp"
#include "core/sparse_exchange.hpp"
#include "graph/backward.hpp"
#include "graph/builder.hpp"
#include "graph/optimizer.hpp"

namespace {

using namespace pe;

constexpr std::int64_t table_rows = 1'000'000, width = 64, words = 20, batch_per_place = 256;

/// The bag-of-words programs, sparse or dense gradient.
struct bow_model {
  explicit bow_model(bool sparse) {
    program_builder b(main, startup, 17);
    ids = b.data("ids", {-1, words}, dtype::int64);
    label = b.data("label", {-1, 1}, dtype::int64);
    const std::string w = b.parameter("emb.w", {table_rows, width}, program_builder::init::xavier_uniform);
    b.append_op("lookup_table_v2", {{"W", {w}}, {"Ids", {ids}}}, {{"Out", {"emb.out"}}}, {{"is_sparse", sparse}});
    b.append_op("reduce_mean", {{"X", {"emb.out"}}}, {{"Out", {"bag"}}},
                {{"dim", std::vector<std::int32_t>{1}}, {"keep_dim", false}, {"reduce_all", false}});
    const std::string logits = b.fc("bag", 2, "");
    loss = b.mean(b.softmax_with_cross_entropy(logits, label).second);
    append_optimizer(b, {.kind = "sgd", .learning_rate = 0.5f}, append_backward(main, loss));
  }
  proto::ProgramDesc main, startup;
  std::string ids, label, loss;
};

/// `rows` samples: ids uniform over the table, labels 0/1 (one generator, seeded).
feed_map batch(const bow_model& m, std::int64_t rows) {
  std::mt19937_64 gen(7);
  std::uniform_int_distribution<std::int64_t> id(0, table_rows - 1), cls(0, 1);
  std::vector<std::int64_t> ids, labels;
  for (std::int64_t i = 0; i < rows * words; ++i) ids.push_back(id(gen));
  for (std::int64_t i = 0; i < rows; ++i) labels.push_back(cls(gen));
  return {{m.ids, tensor::from_vector(ids, {rows, words})}, {m.label, tensor::from_vector(labels, {rows, 1})}};
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0; // KiB on Linux
}

/// One configuration's result, as a child reports it on its pipe.
struct result {
  double samples_per_s = 0, bytes_per_step = 0, peak_rss_mb = 0;
};

struct config {
  bool sparse;
  int processes; ///< 1: one process of 2 places; 2: two processes of 1 place
  int steps;
};

/// What one process of `c` measures: rank `rank`, master on `port` when several.
result run_process(const config& c, int rank, int port) {
  const bow_model m(c.sparse);
  std::unique_ptr<process_group> group;
  std::vector<place> places;
  if (c.processes > 1) {
    process_group_options g;
    g.rank = rank;
    g.size = c.processes;
    g.master_port = port;
    g.fingerprint = {{"bench", "sparse_bench"}};
    group = join_processes(g);
    places = {place::cpu(rank)};
  } else {
    places = {place::cpu(0), place::cpu(1)};
  }
  execution_strategy exec;
  exec.group = group.get();
  parallel_executor exe(places, m.startup, m.main, {}, exec);
  const std::int64_t global = batch_per_place * 2;
  const feed_map all = batch(m, global);
  const auto [first, count] = exe.share_of(global);
  feed_map mine;
  for (const auto& [name, t] : all) mine[name] = t.slice(first, first + count);
  auto step = [&] { exe.run_share(mine, global, {m.loss}); };
  for (int w = 0; w < 2; ++w) step();
  const std::uint64_t sent = payload_bytes_sent();
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < c.steps; ++s) step();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result r;
  r.samples_per_s = static_cast<double>(global * c.steps) / seconds;
  if (c.processes > 1) {
    r.bytes_per_step = static_cast<double>(payload_bytes_sent() - sent) / c.steps;
  } else if (c.sparse) {
    // Each place gathers the other's rows: a row index and 64 floats per id.
    r.bytes_per_step = static_cast<double>(sparse_exchange_bytes(batch_per_place * words, width));
  } else {
    r.bytes_per_step = static_cast<double>(table_rows * width * 4); // the other place's W@GRAD
  }
  r.peak_rss_mb = peak_rss_mb();
  return r;
}

/// Runs `c` in forked processes; rank 0's result (the processes' samples/s are the global
/// batch's, the same on each; bytes and RSS are per process), or nullopt when one failed.
std::optional<result> run_config(const config& c) {
  const int port = c.processes > 1 ? bench::free_port() : 0; // the OS's pick, before forking
  std::vector<std::pair<pid_t, int>> children; // pid, read end
  for (int rank = 0; rank < c.processes; ++rank) {
    int fds[2];
    if (pipe(fds) != 0) return std::nullopt;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      int status = 0;
      try {
        const result r = run_process(c, rank, port);
        const std::string line = std::to_string(r.samples_per_s) + " " + std::to_string(r.bytes_per_step) + " " +
                                 std::to_string(r.peak_rss_mb) + "\n";
        if (write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) status = 1;
      } catch (const std::exception& e) {
        std::cerr << "sparse_bench: " << e.what() << "\n";
        status = 1;
      }
      _exit(status);
    }
    close(fds[1]);
    children.emplace_back(pid, fds[0]);
  }
  std::optional<result> first;
  bool ok = true;
  for (const auto& [pid, fd] : children) {
    std::string text;
    char buf[256];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    result r;
    std::istringstream in(text);
    if (!(in >> r.samples_per_s >> r.bytes_per_step >> r.peak_rss_mb)) ok = false;
    if (!first) first = r;
    else first->peak_rss_mb = std::max(first->peak_rss_mb, r.peak_rss_mb);
  }
  if (!ok) return std::nullopt;
  return first;
}

/// bench/sparse_torch.py's samples/s and peak RSS (MB) over `steps` steps, or nullopt (said
/// on stderr) when it cannot run.
std::optional<std::pair<double, double>> torch_baseline(int steps) {
  const std::string command =
      bench::torch_command(1, std::string(PE_SOURCE_DIR) + "/bench/sparse_torch.py --steps " + std::to_string(steps)) +
      " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string text;
  char buf[512];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, n);
  const int status = pclose(pipe);
  const auto value = [&](const std::string& key) -> std::optional<double> {
    const auto at = text.find(key);
    if (at == std::string::npos) return std::nullopt;
    return std::stod(text.substr(at + key.size()));
  };
  const auto samples = value("samples_per_s="), rss = value("peak_rss_mb=");
  if (status != 0 || !samples || !rss) {
    std::cerr << "sparse_bench: the PyTorch baseline failed (" << command << "): " << text << "\n";
    return std::nullopt;
  }
  return std::make_pair(*samples, *rss);
}

constexpr const char* usage =
    "Usage: sparse_bench [--steps=N] [--dense-steps=N] [--benchmark_* flags, ignored]\n"
    "Trains a bag-of-words model with a 1M x 64 sparse embedding on 2 places of one process and\n"
    "on 2 processes, sparse against dense gradients (and PyTorch DDP where /usr/bin/python3 has\n"
    "torch), and prints one markdown table. --steps: timed steps of the sparse runs (default 30);\n"
    "--dense-steps: of the dense runs (default 3). Both at least 1.\n";

/// --NAME=N from argv (a positive count), else `fallback`; exits with status 2 naming a bad one.
int flag(int argc, char** argv, const std::string& name, int fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(prefix, 0) != 0) continue;
    std::size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(arg.substr(prefix.size()), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != arg.size() - prefix.size() || value < 1) {
      std::cerr << "sparse_bench: error: " << arg << ": expected a whole number of at least 1\n" << usage;
      std::exit(2);
    }
    return value;
  }
  return fallback;
}

/// Exits: with the usage for --help, with status 2 for an argument it does not know.
void check_arguments(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage;
      std::exit(0);
    }
    if (arg.rfind("--steps=", 0) == 0 || arg.rfind("--dense-steps=", 0) == 0 || arg.rfind("--benchmark_", 0) == 0)
      continue;
    std::cerr << "sparse_bench: error: unknown argument " << arg << "\n" << usage;
    std::exit(2);
  }
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

} // namespace

int main(int argc, char** argv) {
  check_arguments(argc, argv);
  const int steps = flag(argc, argv, "steps", 30), dense_steps = flag(argc, argv, "dense-steps", 3);
  const std::string bench = "sparse embedding 1M x 64 (bow, 256 x 20 ids per place, sgd)";
  std::cout << "| benchmark | configuration | value | baseline | ratio |\n|---|---|---|---|---|\n";
  int failed = 0;
  for (int processes : {1, 2}) {
    const std::string where = processes == 1 ? "2 places, 1 process" : "2 processes x 1 place (caf, 127.0.0.1)";
    std::cerr << "sparse_bench: " << where << ", sparse gradient, " << steps << " steps\n";
    const auto sparse = run_config({true, processes, steps});
    std::cerr << "sparse_bench: " << where << ", dense gradient, " << dense_steps << " steps\n";
    const auto dense = run_config({false, processes, dense_steps});
    if (!sparse || !dense) {
      std::cerr << "sparse_bench: a configuration on " << where << " failed\n";
      ++failed;
      continue;
    }
    const std::string bytes_how = processes == 1 ? " (computed)" : " (payload sent per process)";
    std::cout << "| " << bench << " | " << where << ": samples/s, sparse vs dense gradient | "
              << fixed(sparse->samples_per_s, 1) << " samples/s | " << fixed(dense->samples_per_s, 1)
              << " samples/s (dense) | " << fixed(sparse->samples_per_s / dense->samples_per_s, 1) << "x |\n";
    std::cout << "| " << bench << " | " << where << ": bytes exchanged per step" << bytes_how << " | "
              << fixed(sparse->bytes_per_step / 1e6, 2) << " MB | " << fixed(dense->bytes_per_step / 1e6, 2)
              << " MB (dense) | " << fixed(sparse->bytes_per_step / dense->bytes_per_step, 4) << " |\n";
    std::cout << "| " << bench << " | " << where << ": peak RSS (largest process) | "
              << fixed(sparse->peak_rss_mb, 0) << " MB | " << fixed(dense->peak_rss_mb, 0) << " MB (dense) | "
              << fixed(sparse->peak_rss_mb / dense->peak_rss_mb, 2) << " |\n";
    if (processes == 1) continue;
    std::cerr << "sparse_bench: PyTorch DDP (gloo), 2 processes, " << steps << " steps\n";
    const auto torch = torch_baseline(steps);
    if (!torch) continue;
    std::cout << "| " << bench << " | " << where << " vs PyTorch 1.13 DDP (gloo, 2 processes): samples/s | "
              << fixed(sparse->samples_per_s, 1) << " samples/s | " << fixed(torch->first, 1)
              << " samples/s (PyTorch) | " << fixed(sparse->samples_per_s / torch->first, 2) << "x |\n";
    std::cout << "| " << bench << " | " << where << " vs PyTorch: peak RSS (largest process) | "
              << fixed(sparse->peak_rss_mb, 0) << " MB | " << fixed(torch->second, 0) << " MB (PyTorch) | "
              << fixed(sparse->peak_rss_mb / torch->second, 2) << " |\n";
  }
  return failed == 0 ? 0 : 1;
}
