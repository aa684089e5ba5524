// CUDA-graph steps (execution_strategy::cuda_graphs, actors/captured_steps.hpp) where there is
// no GPU: on GPU places simulated on the host whose "driver" refuses every capture at its
// start (tests/support/host_gpu_device), the executor's path for a capture that fails runs --
// graphs turned off naming why, the step rerun eagerly under a new step number (the op actors
// ignore messages of a step they already fired: reusing it hung the step on a GPU), the same
// losses as an executor without graphs, bit for bit, on one and two places; and a device that
// offers no capture is refused. What only a GPU shows (replays) is gpu_graphs_test's.
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/gpu_places.hpp"
#include "tests/support/host_gpu_device.hpp"

namespace pe {
namespace {

class CapturedSteps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::simulate_gpu_places(); }
  void TearDown() override { testing::set_simulated_capture_refused(false); }
};

execution_strategy with_graphs() {
  execution_strategy exec;
  exec.cuda_graphs = true;
  exec.stall_timeout_s = 20; // a step that hangs (as the rerun did, reusing its step number) fails
  return exec;
}

TEST_F(CapturedSteps, ARefusedCaptureTurnsGraphsOffAndItsStepRunsEagerly) {
  testing::set_simulated_capture_refused(true);
  for (const char* optimizer : {"sgd", "adam"})
    for (int places : {1, 2}) {
      SCOPED_TRACE(std::string(optimizer) + " on " + std::to_string(places) + " places");
      const auto m = testing::argmax_mlp(optimizer, 0.05f);
      parallel_executor eager(testing::logical_gpu_places(places), m.startup, m.main);
      parallel_executor graphs(testing::logical_gpu_places(places), m.startup, m.main, {}, with_graphs());
      for (int s = 0; s < 8; ++s) {
        const feed_map feed = testing::argmax_feed(m, 12, 40 + static_cast<std::uint64_t>(s));
        const float want = eager.run(feed, {m.loss})[0].values<float>()[0];
        const float got = graphs.run(feed, {m.loss})[0].values<float>()[0];
        EXPECT_EQ(got, want) << "step " << s;
      }
      const auto c = graphs.cuda_graph_statistics();
      EXPECT_EQ(c.captures, 0u);
      EXPECT_EQ(c.replays, 0u);
      EXPECT_EQ(c.off_reason, "simulated: the driver refused the capture at its start");
    }
}

TEST_F(CapturedSteps, PlacesWhoseDeviceCannotCaptureAreRefused) {
  const auto m = testing::argmax_mlp("sgd", 0.05f);
  testing::expect_error([&] { parallel_executor exe(testing::logical_gpu_places(2), m.startup, m.main, {}, with_graphs()); },
                        {"CUDA graphs (--cuda-graphs) cannot run here: the places' device cannot capture"});
}

} // namespace
} // namespace pe
