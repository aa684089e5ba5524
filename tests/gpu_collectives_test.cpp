// GPU collectives on a GPU (skipped without one): the shared-GPU communicator over logical
// places on device 0 (gpu:0x2, gpu:0x4) and NCCL over distinct GPUs give the element-wise
// sums (all-reduce, reduce) and the root's values (broadcast), checked on the host.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectives/communicators.hpp"
#include "core/tensor.hpp"
#include "devices/device.hpp"
#include "devices/gpu_runtime.hpp"

namespace pe {
namespace {

struct gpu_places {
  std::vector<std::unique_ptr<device>> owned;
  std::vector<device*> devices;
};

/// `count` places: logical places on GPU 0, or one per GPU.
gpu_places open_places(int count, bool shared) {
  gpu_places p;
  for (int i = 0; i < count; ++i) {
    p.owned.push_back(open_device(place::gpu(i, shared ? 0 : i)));
    p.devices.push_back(p.owned.back().get());
  }
  return p;
}

/// Rank r's values: r + 1 + i / 8.
std::vector<float> values_of(int rank, int n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(rank + 1) + static_cast<float>(i) / 8;
  return v;
}

/// Runs `what` over every place with each rank's values_of and returns each rank's result.
std::vector<std::vector<float>> run(gpu_places& p, collective_call::kind what, int root, int n) {
  auto comm = make_communicator(p.devices, nullptr);
  const int ranks = static_cast<int>(p.devices.size());
  std::vector<tensor> on_gpu(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    device& d = *p.devices[static_cast<std::size_t>(r)];
    stream& s = d.get_stream(stream_kind::communication);
    const tensor host = tensor::from_vector(values_of(r, n), {n});
    d.copy(s, on_gpu[static_cast<std::size_t>(r)], host);
    EXPECT_TRUE(s.synchronize()) << s.error().value_or("");
  }
  for (int r = 0; r < ranks; ++r)
    comm->launch({what, root, 0, "test collective"}, r, {&on_gpu[static_cast<std::size_t>(r)]},
                 p.devices[static_cast<std::size_t>(r)]->get_stream(stream_kind::communication));
  std::vector<std::vector<float>> out;
  for (int r = 0; r < ranks; ++r) {
    device& d = *p.devices[static_cast<std::size_t>(r)];
    stream& s = d.get_stream(stream_kind::communication);
    tensor back;
    d.copy(s, back, on_gpu[static_cast<std::size_t>(r)]);
    EXPECT_TRUE(s.synchronize()) << s.error().value_or("");
    out.emplace_back(back.values<float>().begin(), back.values<float>().end());
  }
  return out;
}

void check_collectives(int ranks, bool shared) {
  const gpu_inventory gpus = query_gpus();
  if (gpus.count == 0) GTEST_SKIP() << "no GPU: " << gpus.problem;
  if (!shared && gpus.count < ranks) GTEST_SKIP() << "needs " << ranks << " GPUs, " << gpus.count << " visible";
  constexpr int n = 1000;
  gpu_places p = open_places(ranks, shared);
  std::vector<float> sum(n, 0.f);
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < n; ++i) sum[static_cast<std::size_t>(i)] += values_of(r, n)[static_cast<std::size_t>(i)];
  const auto reduced = run(p, collective_call::kind::all_reduce, 0, n);
  for (const auto& got : reduced) EXPECT_EQ(got, sum);
  const auto to_root = run(p, collective_call::kind::reduce, ranks - 1, n);
  EXPECT_EQ(to_root.back(), sum);
  EXPECT_EQ(to_root.front(), values_of(0, n)) << "a reduce leaves the other ranks' values";
  const auto broadcast = run(p, collective_call::kind::broadcast, 1, n);
  for (const auto& got : broadcast) EXPECT_EQ(got, values_of(1, n));
}

TEST(GpuCollectives, TwoLogicalPlacesOnOneGpu) { check_collectives(2, true); }
TEST(GpuCollectives, FourLogicalPlacesOnOneGpu) { check_collectives(4, true); }
TEST(GpuCollectives, NcclOverTwoGpus) { check_collectives(2, false); }

} // namespace
} // namespace pe
