// execution_strategy::pin_places: by default (place_pinning::when_full) the CPU places' device
// threads are pinned to cores of their own where the places are as many as the cores this
// process may use, and left to the scheduler where cores are to spare; always pins (round
// robin past the cores), never does not. Pinning moves threads, not what a step computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "actors/parallel_executor.hpp"
#include "core/place_list.hpp"
#include "devices/host_cpus.hpp"
#include "tests/support/batches.hpp"

namespace {

using namespace pe;
using pe::testing::argmax_feed;
using pe::testing::argmax_mlp;

/// "0-3,5" -> {0, 1, 2, 3, 5}.
std::vector<int> cpu_list(const std::string& text) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, end - at);
    const std::size_t dash = part.find('-');
    const int lo = std::stoi(part.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
    for (int c = lo; c <= hi; ++c) out.push_back(c);
    at = end + 1;
  }
  return out;
}

/// The CPU of every thread of this process that may run on one CPU only (its
/// Cpus_allowed_list in /proc/self/task/<tid>/status).
std::multiset<int> pinned_threads() {
  std::multiset<int> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      const std::string key = "Cpus_allowed_list:";
      if (line.rfind(key, 0) != 0) continue;
      const auto first = line.find_first_not_of(" \t", key.size());
      const std::vector<int> cpus = cpu_list(line.substr(first));
      if (cpus.size() == 1) out.insert(cpus.front());
    }
  }
  return out;
}

/// The threads pinned after one step of the MLP on `places` CPU places with `pinning`.
std::multiset<int> pinned_by_a_step(int places, place_pinning pinning) {
  const model_programs m = argmax_mlp("sgd", 0.1f);
  execution_strategy exec;
  exec.pin_places = pinning;
  parallel_executor exe(make_cpu_places(places), m.startup, m.main, {}, exec);
  exe.run(argmax_feed(m, 8, 1), {m.loss});
  return pinned_threads();
}

int cores() { return static_cast<int>(allowed_cpus().size()); }

/// On one allowed CPU every thread's list is that CPU: a pinned thread looks like any other.
#define SKIP_ON_ONE_CPU() \
  if (cores() < 2) GTEST_SKIP() << "one allowed CPU: pinned and unpinned threads look the same"

TEST(PlacePinning, PlacesAsManyAsTheCoresAreEachPinnedToTheirOwnByDefault) {
  SKIP_ON_ONE_CPU();
  ASSERT_TRUE(pinned_threads().empty()) << "a thread of the test binary is pinned already";
  const std::vector<int> cpus = allowed_cpus();
  const std::multiset<int> pinned = pinned_by_a_step(cores(), place_pinning::when_full);
  EXPECT_EQ(pinned, std::multiset<int>(cpus.begin(), cpus.end()));
}

TEST(PlacePinning, PlacesWithCoresToSpareAreLeftToTheSchedulerByDefault) {
  SKIP_ON_ONE_CPU();
  EXPECT_TRUE(pinned_by_a_step(cores() - 1, place_pinning::when_full).empty());
}

TEST(PlacePinning, NeverLeavesEvenAFullMachineToTheScheduler) {
  SKIP_ON_ONE_CPU();
  EXPECT_TRUE(pinned_by_a_step(cores(), place_pinning::never).empty());
}

TEST(PlacePinning, AlwaysPinsRoundRobinPastTheCores) {
  SKIP_ON_ONE_CPU();
  const std::vector<int> cpus = allowed_cpus();
  const int places = cores() + 1;
  std::multiset<int> expected;
  for (int i = 0; i < places; ++i) expected.insert(cpus[static_cast<std::size_t>(i) % cpus.size()]);
  EXPECT_EQ(pinned_by_a_step(places, place_pinning::always), expected);
}

TEST(PlacePinning, PinnedOrNotAStepComputesTheSame) {
  const model_programs m = argmax_mlp("sgd", 0.1f);
  const feed_map feed = argmax_feed(m, 16, 2);
  std::vector<std::vector<float>> losses;
  for (place_pinning pinning : {place_pinning::when_full, place_pinning::never}) {
    execution_strategy exec;
    exec.pin_places = pinning;
    parallel_executor exe(make_cpu_places(cores()), m.startup, m.main, {}, exec);
    std::vector<float> mine;
    for (int s = 0; s < 5; ++s) mine.push_back(exe.run(feed, {m.loss}).at(0).values<float>()[0]);
    losses.push_back(mine);
  }
  EXPECT_EQ(losses[0], losses[1]);
}

} // namespace
