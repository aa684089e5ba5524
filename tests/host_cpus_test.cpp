// pin_places (devices/host_cpus.hpp): each CPU place's device thread bound to the CPU it was
// given among this process's allowed ones, round robin beyond them, and nothing for a place
// without a host thread of its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include <pthread.h>
#include <sched.h>

#include "devices/device.hpp"
#include "devices/host_cpus.hpp"
#include "tests/support/host_gpu_device.hpp"

namespace {

using namespace pe;

/// The CPUs the thread running the compute stream of `d` may run on, read on that thread.
std::vector<int> device_thread_cpus(device& d) {
  std::vector<int> cpus;
  stream& s = d.get_stream(stream_kind::compute);
  s.enqueue([&cpus] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  });
  EXPECT_TRUE(s.synchronize());
  return cpus;
}

TEST(HostCpus, TheAllowedCpusIncludeTheOneThisThreadRunsOn) {
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_NE(std::find(cpus.begin(), cpus.end(), sched_getcpu()), cpus.end());
}

TEST(HostCpus, EachPlaceIsPinnedToItsCpuRoundRobinFromTheFirst) {
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  // More places than CPUs (and a first past the count): the choice wraps around.
  const int places = static_cast<int>(cpus.size()) + 1, first = static_cast<int>(cpus.size()) + 1;
  std::vector<std::unique_ptr<device>> owned;
  std::vector<device*> devices;
  for (int i = 0; i < places; ++i) {
    owned.push_back(open_device(place::cpu(i)));
    devices.push_back(owned.back().get());
  }
  const std::vector<int> before = device_thread_cpus(*devices[0]);
  EXPECT_EQ(before, cpus) << "unpinned, a device thread may run on any allowed CPU";
  EXPECT_EQ(pin_places(devices, first), places);
  for (int i = 0; i < places; ++i) {
    const int expected = cpus[static_cast<std::size_t>(first + i) % cpus.size()];
    EXPECT_EQ(device_thread_cpus(*devices[static_cast<std::size_t>(i)]), std::vector<int>{expected}) << "place " << i;
  }
}

TEST(HostCpus, APlaceWithoutAHostThreadOfItsOwnIsNotPinned) {
  pe::testing::host_gpu_device gpu(place::gpu(0));
  std::vector<device*> devices{&gpu};
  EXPECT_EQ(pin_places(devices, 0), 0);
  EXPECT_FALSE(gpu.pin_host_thread(0));
}

} // namespace
