// The in-process CPU collectives: correct sums, fixed order, any chunking.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>

#include "collectives/cpu/cpu_collective.hpp"

namespace {

using pe::cpu_collective;

/// Per-place buffers for variables of the given sizes, random values from `seed`.
struct places_data {
  std::vector<std::vector<std::vector<float>>> values; // [var][place][i]

  places_data(std::vector<std::size_t> sizes, int places, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto n : sizes) {
      values.emplace_back();
      for (int p = 0; p < places; ++p) {
        values.back().emplace_back(n);
        for (auto& x : values.back().back()) x = u(rng);
      }
    }
  }

  cpu_collective task(cpu_collective::kind what, int root = 0) {
    cpu_collective c;
    c.what = what;
    c.root = root;
    for (auto& var : values) {
      c.buffers.emplace_back();
      for (auto& place : var) c.buffers.back().push_back(place.data());
      c.sizes.push_back(var[0].size());
    }
    return c;
  }
};

TEST(cpu_collective, all_reduce_sums_in_place_order_on_every_place) {
  places_data d({1000, 7, 70000}, 3, 1);
  auto before = d.values;
  d.task(cpu_collective::kind::all_reduce).run();
  for (std::size_t v = 0; v < before.size(); ++v)
    for (std::size_t i = 0; i < before[v][0].size(); ++i) {
      float want = (before[v][0][i] + before[v][1][i]) + before[v][2][i];
      for (int p = 0; p < 3; ++p) ASSERT_EQ(d.values[v][p][i], want) << v << " " << i;
    }
}

TEST(cpu_collective, chunking_and_threads_do_not_change_a_bit) {
  places_data serial({123457, 65, 4096}, 4, 2), chunked = serial;
  serial.task(cpu_collective::kind::all_reduce).run();
  auto task = chunked.task(cpu_collective::kind::all_reduce);
  std::vector<std::thread> workers;
  for (std::size_t k = 0; k < 7; ++k) workers.emplace_back([&task, k] { task.run_chunk(k, 7); });
  for (auto& w : workers) w.join();
  EXPECT_EQ(serial.values, chunked.values);
}

TEST(cpu_collective, reduce_writes_only_the_root) {
  places_data d({5000}, 3, 3);
  auto before = d.values;
  d.task(cpu_collective::kind::reduce, 1).run();
  for (std::size_t i = 0; i < 5000; ++i) {
    EXPECT_EQ(d.values[0][1][i], (before[0][0][i] + before[0][1][i]) + before[0][2][i]);
    EXPECT_EQ(d.values[0][0][i], before[0][0][i]);
    EXPECT_EQ(d.values[0][2][i], before[0][2][i]);
  }
}

TEST(cpu_collective, broadcast_copies_the_root) {
  places_data d({3000, 10}, 4, 4);
  auto before = d.values;
  d.task(cpu_collective::kind::broadcast, 2).run_chunk(0, 1);
  for (std::size_t v = 0; v < 2; ++v)
    for (int p = 0; p < 4; ++p) EXPECT_EQ(d.values[v][p], before[v][2]) << v << " " << p;
}

} // namespace
