// The NCCL unique id of a job of several processes: made by rank 0 (ncclGetUniqueId needs
// the NCCL library, not a GPU) and sent to the others through the process group's host
// broadcast; what arrives is checked. In-memory processes (loopback transports) on threads.
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectives/net/process_group.hpp"
#include "tests/support/loopback_transport.hpp"
#if PE_WITH_NCCL
#include "collectives/gpu/nccl_id.hpp"
#endif

namespace pe {
namespace {

#if PE_WITH_NCCL

TEST(NcclId, IsMadeWithoutAGpu) {
  const std::vector<char> a = make_nccl_id(), b = make_nccl_id();
  EXPECT_EQ(a.size(), 128u);
  EXPECT_NE(a, b) << "two ids must differ";
}

TEST(NcclId, RankZerosIdReachesEveryProcess) {
  constexpr int processes = 3;
  testing::loopback_network network(processes);
  std::vector<std::future<std::vector<char>>> ids;
  for (int r = 0; r < processes; ++r)
    ids.push_back(std::async(std::launch::async, [&network, r] {
      process_group group(network.transport(r), 0, std::chrono::seconds(20));
      return share_nccl_id(group);
    }));
  std::vector<std::vector<char>> got;
  for (auto& f : ids) got.push_back(f.get());
  EXPECT_EQ(got[0].size(), 128u);
  EXPECT_EQ(got[1], got[0]);
  EXPECT_EQ(got[2], got[0]);
}

TEST(NcclId, AnIdOfAnotherSizeIsRefusedNamingRankZero) {
  testing::loopback_network network(2);
  auto lying_root = std::async(std::launch::async, [&network] {
    process_group group(network.transport(0), 0, std::chrono::seconds(20));
    group.broadcast(bytes_of("xxxxx", 5), 0); // not an id
  });
  process_group group(network.transport(1), 0, std::chrono::seconds(20));
  try {
    share_nccl_id(group);
    ADD_FAILURE() << "a 5-byte id was taken";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("process rank 0 sent an NCCL id of 5 bytes, not 128"), std::string::npos)
        << e.what();
  }
  lying_root.get();
}

#else

TEST(NcclId, NeedsTheCudaBuildWithNccl) {
  GTEST_SKIP() << "this build has no NCCL (PE_WITH_CUDA off, or the toolkit lacks NCCL)";
}

#endif

} // namespace
} // namespace pe
