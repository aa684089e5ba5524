// The check that every NCCL rank of a job of several processes has a GPU of its own: the
// processes exchange their GPU places (machine and PCI bus id, given here as made-up values,
// so no GPU is needed) and all refuse a shared one with the same message. In-memory
// processes (loopback transports) on threads.
#include <future>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "collectives/gpu/distinct_gpus.hpp"
#include "collectives/net/process_group.hpp"
#include "tests/support/loopback_transport.hpp"

namespace pe {
namespace {

/// Each process's refuse_shared_gpus over its `gpus[rank]`, run at once: the message each
/// threw, or nullopt where it passed.
std::vector<std::optional<std::string>> check_job(const std::vector<std::vector<gpu_of_place>>& gpus) {
  const int processes = static_cast<int>(gpus.size());
  testing::loopback_network network(processes);
  std::vector<std::future<std::optional<std::string>>> results;
  for (int r = 0; r < processes; ++r)
    results.push_back(std::async(std::launch::async, [&network, &gpus, r]() -> std::optional<std::string> {
      process_group group(network.transport(r), 0, std::chrono::seconds(20));
      try {
        refuse_shared_gpus(group, gpus[static_cast<std::size_t>(r)]);
        return std::nullopt;
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
    }));
  std::vector<std::optional<std::string>> out;
  for (auto& f : results) out.push_back(f.get());
  return out;
}

constexpr const char* bus0 = "0000:3B:00.0";
constexpr const char* bus1 = "0000:5E:00.0";

TEST(DistinctGpus, OneGpuPerPlacePasses) {
  // Two processes on one machine with a GPU each, a third on another machine whose GPU has
  // the first one's bus id: all distinct GPUs.
  const auto results = check_job({{{"gpu:0", "node-a", "host-a", bus0}},
                                  {{"gpu:0", "node-a", "host-a", bus1}},
                                  {{"gpu:0", "node-b", "host-b", bus0}}});
  for (std::size_t r = 0; r < results.size(); ++r) EXPECT_FALSE(results[r].has_value()) << "rank " << r << ": " << *results[r];
}

TEST(DistinctGpus, TwoProcessesOnOneGpuAreRefusedByEveryProcess) {
  // What `pe-actor-launch --nproc 2 -- --places gpu:0` does on one machine.
  const auto results = check_job({{{"gpu:0", "node-a", "host-a", bus0}}, {{"gpu:0", "node-a", "host-a", bus0}}});
  for (std::size_t r = 0; r < results.size(); ++r) {
    ASSERT_TRUE(results[r].has_value()) << "rank " << r << " took a shared GPU";
    EXPECT_NE(results[r]->find("process rank 1's gpu:0 is the GPU of process rank 0's gpu:0 (PCI 0000:3B:00.0 "
                               "on host-a): NCCL needs a GPU of its own"),
              std::string::npos)
        << *results[r];
    EXPECT_NE(results[r]->find("--places gpu:all"), std::string::npos) << *results[r];
  }
}

TEST(DistinctGpus, ContainersOfOneMachineAreOneMachineWhateverTheirHostnames) {
  const auto results = check_job({{{"gpu:0", "boot 5f0c", "container-1", bus0}},
                                  {{"gpu:0", "boot 5f0c", "container-2", bus0}}});
  for (const auto& message : results) {
    ASSERT_TRUE(message.has_value());
    EXPECT_NE(message->find("(PCI 0000:3B:00.0 on container-2)"), std::string::npos) << *message;
  }
}

TEST(DistinctGpus, TwoPlacesOfOneProcessOnOneGpuAreRefused) {
  // gpu:0x2 in a job: the two logical places are one GPU in two NCCL ranks.
  const auto results = check_job({{{"gpu:0", "node-a", "host-a", bus0}, {"gpu:1@dev0", "node-a", "host-a", bus0}},
                                  {{"gpu:0", "node-b", "host-b", bus0}, {"gpu:1@dev0", "node-b", "host-b", bus0}}});
  for (const auto& message : results) {
    ASSERT_TRUE(message.has_value());
    EXPECT_NE(message->find("process rank 0's gpu:1@dev0 is the GPU of process rank 0's gpu:0"), std::string::npos)
        << *message;
  }
}

TEST(DistinctGpus, AnUnreadableListIsRefusedNamingItsProcess) {
  for (const std::string& garbage : {std::string("gpu:0\tnode-a\n"), std::string("\t\t\n"),
                                    std::string("gpu:0\tnode-a\thost-a\t0000:3B:00.0\textra\n"), std::string("\n")}) {
    testing::loopback_network network(2);
    auto liar = std::async(std::launch::async, [&network, &garbage] {
      process_group group(network.transport(1), 0, std::chrono::seconds(20));
      group.all_gather({garbage.begin(), garbage.end()});
    });
    process_group group(network.transport(0), 0, std::chrono::seconds(20));
    try {
      refuse_shared_gpus(group, {{"gpu:0", "node-a", "host-a", bus0}});
      ADD_FAILURE() << "took the list " << garbage;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("process rank 1 sent an unreadable list of its GPUs (line 1)"),
                std::string::npos)
          << e.what();
    }
    liar.get();
  }
}

TEST(DistinctGpus, ThisMachineIsTheBootIdOrTheHostAndStaysTheSame) {
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(this_host(), host);
  const std::string machine = this_machine();
  EXPECT_TRUE(machine.starts_with("boot ") || machine == "host " + std::string(host)) << machine;
  EXPECT_GT(machine.size(), 5u);
  EXPECT_EQ(machine.find('\t'), std::string::npos);
  EXPECT_EQ(machine.find('\n'), std::string::npos);
  EXPECT_EQ(this_machine(), machine);
}

} // namespace
} // namespace pe
