// CPU all-reduce bandwidth across 2 places, 4 KiB to 64 MiB per place, against memcpy of
// the same bytes. The all-reduce is what the actor executor runs: an inproc_communicator
// launch on each of two CPU devices' communication streams, each device thread summing its
// half, timed until both streams are done. Bandwidth is one place's buffer bytes per second
// (NCCL's "algorithm bandwidth"): the all-reduce reads 2 such buffers and writes 2, one
// thread's memcpy reads 1 and writes 1.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/report.hpp"
#include "collectives/cpu/inproc_communicator.hpp"
#include "core/error.hpp"
#include "devices/device.hpp"

namespace {

using namespace pe;

constexpr int places = 2;

void all_reduce(benchmark::State& state, std::size_t bytes) {
  const auto n = static_cast<std::int64_t>(bytes / sizeof(float));
  std::vector<std::unique_ptr<device>> devices;
  // Zeros stay zeros however many rounds run (no overflow, no denormals).
  std::vector<tensor> buffers;
  for (int p = 0; p < places; ++p) {
    devices.push_back(open_device(place::cpu(p)));
    buffers.push_back(tensor::zeros(dtype::fp32, {n}));
  }
  inproc_communicator comm(places);
  std::uint64_t sequence = 0;
  auto round = [&] {
    collective_call call{collective_call::kind::all_reduce, 0, sequence++, "all_reduce(bench)"};
    for (int p = 0; p < places; ++p)
      comm.launch(call, p, {&buffers[static_cast<std::size_t>(p)]},
                  devices[static_cast<std::size_t>(p)]->get_stream(stream_kind::communication));
    for (auto& d : devices)
      if (!d->get_stream(stream_kind::communication).synchronize())
        throw error("all-reduce failed: " + d->get_stream(stream_kind::communication).error().value_or("?"));
  };
  round();
  for (auto _ : state) round();
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void copy(benchmark::State& state, std::size_t bytes) {
  std::vector<char> from(bytes), to(bytes);
  std::memcpy(to.data(), from.data(), bytes);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

} // namespace

int main(int argc, char** argv) {
  if (!bench::initialize(argc, argv)) return 1;

  const bench::metric bandwidth{"bytes_per_second", "GB/s", 1e-9};
  std::vector<bench::comparison> rows;
  for (std::size_t bytes = 4u << 10; bytes <= 64u << 20; bytes *= 4) {
    const std::string size = std::to_string(bytes);
    const std::string reduce_name = "allreduce/bytes:" + size, copy_name = "memcpy/bytes:" + size;
    benchmark::RegisterBenchmark(reduce_name.c_str(), all_reduce, bytes)->UseRealTime();
    benchmark::RegisterBenchmark(copy_name.c_str(), copy, bytes)->UseRealTime();
    rows.push_back({"CPU all-reduce, 2 places (device threads)", bench::size_name(bytes) + " per place",
                    reduce_name, copy_name, "memcpy, 1 thread", bandwidth});
  }
  bench::run_and_report(rows);
}
