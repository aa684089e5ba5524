// What TLS between processes costs, each pair measured in the same run on 127.0.0.1:
//  - all-reduce bandwidth across 2 processes (here two process groups in this process, each
//    joined through CAF networking, one CPU place each, the "caf" backend's communicator, as
//    training runs it), 64 KiB to 16 MiB, over mutual TLS against plain TCP;
//  - MLP training throughput of a real 2-process job (pe-actor-launch --nproc 2, samples/s
//    from its --metrics), over mutual TLS against plain TCP.
// The certificates are made for the run with the openssl command.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/job_metrics.hpp"
#include "bench/joined_processes.hpp"
#include "bench/report.hpp"
#include "core/error.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;

namespace fs = std::filesystem;

const fs::path scratch = fs::temp_directory_path() / ("pe-tls-bench-" + std::to_string(::getpid()));

void openssl(const std::string& args) {
  if (std::system(("cd '" + scratch.string() + "' && openssl " + args + " >/dev/null 2>&1").c_str()) != 0)
    throw error("tls_bench: `openssl " + args + "` failed");
}

/// One certificate of a CA made for this run (both processes present it: mutual TLS with
/// the job's CA, as with one certificate per process).
tls_files certificates() {
  static const tls_files files = [] {
    fs::create_directories(scratch);
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    openssl("req -x509 " + key + " -days 2 -subj /CN=bench-ca -keyout ca.key -out ca.pem");
    openssl("req " + key + " -subj /CN=bench -keyout node.key -out node.csr");
    openssl("x509 -req -days 2 -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out node.pem");
    return tls_files{(scratch / "node.pem").string(), (scratch / "node.key").string(), (scratch / "ca.pem").string()};
  }();
  return files;
}

/// The jobs are formed once per configuration (joining costs a second, not the point).
bench::joined_processes& job(bool tls) {
  static std::map<bool, std::unique_ptr<bench::joined_processes>> jobs;
  auto& j = jobs[tls];
  if (!j) j = std::make_unique<bench::joined_processes>(bench::job_options{2, "caf", tls ? certificates() : tls_files{}});
  return *j;
}

void all_reduce(benchmark::State& state, std::size_t bytes, bool tls) {
  auto& j = job(tls);
  const auto n = static_cast<std::int64_t>(bytes / sizeof(float));
  std::vector<tensor> buffers{tensor::zeros(dtype::fp32, {n}), tensor::zeros(dtype::fp32, {n})};
  j.all_reduce(buffers);
  for (auto _ : state) j.all_reduce(buffers);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

/// One 2-process MLP job through pe-actor-launch; its samples/s as the counter.
void mlp_job(benchmark::State& state, bool tls) {
  const fs::path metrics = scratch / (tls ? "tls.json" : "plain.json");
  std::string command = std::string(PE_LAUNCH_BINARY) + " --nproc 2 -- --model mlp --places cpu:1 --steps 300 "
                        "--batch-size 512 --metrics " + metrics.string();
  if (tls) {
    const auto f = certificates();
    command += " --tls-cert " + f.certificate + " --tls-key " + f.key + " --tls-ca " + f.ca;
  }
  command = "PE_ACTOR_RUN=" + std::string(PE_RUN_BINARY) + " " + command;
  double samples = 0;
  for (auto _ : state) {
    const auto measured = bench::job_samples_per_sec(state, command, metrics.string());
    if (!measured) return;
    samples = *measured;
  }
  state.counters["samples_per_sec"] = samples;
}

} // namespace

int main(int argc, char** argv) {
  if (!bench::initialize(argc, argv)) return 1;
  const bench::metric bandwidth{"bytes_per_second", "GB/s", 1e-9};
  std::vector<bench::comparison> rows;
  for (std::size_t bytes = 64u << 10; bytes <= 16u << 20; bytes *= 16) {
    const std::string size = std::to_string(bytes);
    const std::string tls_name = "allreduce_tls/bytes:" + size, plain_name = "allreduce_tcp/bytes:" + size;
    benchmark::RegisterBenchmark(tls_name.c_str(), all_reduce, bytes, true)->UseRealTime();
    benchmark::RegisterBenchmark(plain_name.c_str(), all_reduce, bytes, false)->UseRealTime();
    rows.push_back({"all-reduce across 2 processes over mutual TLS", bench::size_name(bytes) + " per process",
                    tls_name, plain_name, "plain TCP", bandwidth});
  }
  benchmark::RegisterBenchmark("mlp_tls", mlp_job, true)->Iterations(1)->UseRealTime();
  benchmark::RegisterBenchmark("mlp_tcp", mlp_job, false)->Iterations(1)->UseRealTime();
  rows.push_back({"MLP training, 2 processes x 1 place, over mutual TLS", "batch 512, 300 steps",
                  "mlp_tls", "mlp_tcp", "plain TCP", {"samples_per_sec", "samples/s", 1}});
  bench::run_and_report(rows);
  fs::remove_all(scratch);
}
