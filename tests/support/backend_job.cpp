#include "tests/support/backend_job.hpp"

#include <gtest/gtest.h>

#include <future>

#include "core/error.hpp"
#include "tests/support/collective_calls.hpp"
#include "tests/support/collective_values.hpp"

namespace pe::testing {

using namespace std::chrono_literals;
using kind = collective_call::kind;

backend_job::backend_job(int processes, int local, const std::string& backend, maker make)
    : collective_job(processes, local), network(processes) {
  process_group_options options;
  options.collective_backend = backend;
  options.peer_timeout = 10s;
  for (int p = 0; p < processes; ++p)
    groups.push_back(std::make_unique<process_group>(network.transport(p), 0, 30s, options));
  std::vector<std::future<std::unique_ptr<communicator>>> made;
  for (auto& g : groups)
    made.push_back(std::async(std::launch::async, [&g, local, &make]() -> std::unique_ptr<communicator> {
      return make ? make(*g, local) : g->make_communicator(local);
    }));
  for (auto& m : made) comms.push_back(m.get());
}

backend_job::~backend_job() {
  // The communicators before the groups they use.
  for (auto& c : comms) c->abort();
  for (auto& d : devices) d->stop();
  comms.clear();
}

void expect_all_reduce_equals_one_process(const std::string& backend, int processes, int local) {
  backend_job j(processes, local, backend);
  auto values = random_buffers(j.world(), 7);
  const auto expected = single_process(test_call(kind::all_reduce, 0), clone_all(values));
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 0), r, pointers(values[r]));
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 1), r, {&values[r][0]});
  for (auto ok : j.sync_all(20000)) ASSERT_EQ(ok, true);
  for (int r = 0; r < j.world(); ++r)
    for (std::size_t v = 1; v < values[r].size(); ++v) {
      EXPECT_LT(relative_difference(values[r][v], expected[r][v]), 1e-6) << "rank " << r << " var " << v;
      EXPECT_TRUE(bit_identical(values[r][v], values[0][v])) << "rank " << r << " var " << v;
    }
  EXPECT_NEAR(values[0][0].values<float>()[0], expected[0][0].values<float>()[0] * j.world(), 1e-4);
}

void expect_reduce_and_broadcast_with_every_root(const std::string& backend, int processes, int local) {
  backend_job j(processes, local, backend);
  for (int root = 0; root < j.world(); ++root) {
    auto values = random_buffers(j.world(), 11 + root);
    const auto reduced = single_process(test_call(kind::reduce, 0, root), clone_all(values));
    const std::uint64_t first = 2 * static_cast<std::uint64_t>(root);
    for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::reduce, first, root), r, pointers(values[r]));
    for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::broadcast, first + 1, root), r, pointers(values[r]));
    for (auto ok : j.sync_all(20000)) ASSERT_EQ(ok, true);
    for (int r = 0; r < j.world(); ++r)
      for (std::size_t v = 0; v < values[r].size(); ++v) {
        EXPECT_LT(relative_difference(values[r][v], reduced[root][v]), 1e-6) << "root " << root;
        EXPECT_TRUE(bit_identical(values[r][v], values[root][v])) << "root " << root << " rank " << r;
      }
  }
}

void expect_disagreeing_sizes_fail_everywhere(const std::string& backend) {
  backend_job j(3, 1, backend);
  auto a = tensor::from_vector(std::vector<float>(10, 1.f), {10});
  auto b = tensor::from_vector(std::vector<float>(10, 1.f), {10});
  auto c = tensor::from_vector(std::vector<float>(12, 1.f), {12});
  j.launch(test_call(kind::all_reduce, 0), 0, {&a});
  j.launch(test_call(kind::all_reduce, 0), 1, {&b});
  j.launch(test_call(kind::all_reduce, 0), 2, {&c});
  for (auto ok : j.sync_all(20000)) EXPECT_EQ(ok, false);
  for (int r = 0; r < 3; ++r)
    EXPECT_NE(j.error(r).find("the processes disagree on the collective"), std::string::npos) << j.error(r);
  EXPECT_NE(j.error(2).find("over 12 floats"), std::string::npos) << j.error(2);
  EXPECT_EQ(a.values<float>()[0], 1.f) << "nothing was summed";
}

void expect_failed_stream_fails_everywhere_then_recovers(const std::string& backend) {
  backend_job j(2, 2, backend);
  auto values = random_buffers(j.world(), 5);
  j.on(3).enqueue([] { throw error("kernel on rank 3 failed"); });
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 0), r, pointers(values[r]));
  for (auto ok : j.sync_all(20000)) EXPECT_EQ(ok, false);
  EXPECT_NE(j.error(0).find("failed"), std::string::npos) << j.error(0);
  // After the failure, as the executor does between steps: streams cleared, next sequence.
  for (int r = 0; r < j.world(); ++r) j.on(r).clear_error();
  auto again = random_buffers(j.world(), 6);
  const auto expected = single_process(test_call(kind::all_reduce, 0), clone_all(again));
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 1), r, pointers(again[r]));
  for (auto ok : j.sync_all(20000)) ASSERT_EQ(ok, true);
  for (int r = 0; r < j.world(); ++r)
    EXPECT_LT(relative_difference(again[r][2], expected[r][2]), 1e-6) << "rank " << r;
}

} // namespace pe::testing
