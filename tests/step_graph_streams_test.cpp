// Which stream each op of a step runs on (actors/step_graph.cpp): on GPU places the ops that
// read a collective's result (the optimizer behind its gradient's all-reduce) run on the
// communication stream, so that their waits for the collective hold no compute stream; on
// CPU places every computation stays on the compute stream.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "actors/step_graph.hpp"
#include "devices/device.hpp"
#include "graph/exec/scope.hpp"
#include "graph/models/mlp.hpp"
#include "graph/ssa_graph.hpp"
#include "tests/support/host_gpu_device.hpp"

namespace pe {
namespace {

struct streams_of_a_step {
  model_programs m = [] {
    mlp_config c;
    c.input_width = 8;
    c.hidden = {6};
    c.classes = 3;
    return build_mlp(c);
  }();
  std::vector<std::unique_ptr<device>> devices;
  std::vector<std::unique_ptr<scope>> scopes;
  std::unique_ptr<step_graph> graph;

  explicit streams_of_a_step(std::vector<std::unique_ptr<device>> places) : devices(std::move(places)) {
    std::vector<device*> ds;
    std::vector<scope*> ss;
    for (auto& d : devices) {
      ds.push_back(d.get());
      scopes.push_back(std::make_unique<scope>());
      ss.push_back(scopes.back().get());
    }
    graph = std::make_unique<step_graph>(
        m.main, build_ssa_graph(m.main, static_cast<int>(ds.size()), build_strategy{}, {m.loss}), ss, ds);
  }
};

TEST(StepGraphStreams, OnTwoGpuPlacesTheOptimizerRunsBehindItsAllReduce) {
  std::vector<std::unique_ptr<device>> places;
  places.push_back(std::make_unique<testing::host_gpu_device>(place::gpu(0, 0)));
  places.push_back(std::make_unique<testing::host_gpu_device>(place::gpu(1, 0)));
  streams_of_a_step s(std::move(places));
  int optimizers = 0, collectives = 0;
  for (const step_node& n : s.graph->nodes()) {
    if (n.is_collective()) {
      ++collectives;
      EXPECT_EQ(n.runs_on, stream_kind::communication) << n.label;
    } else if (n.type == "sgd") {
      ++optimizers;
      EXPECT_EQ(n.runs_on, stream_kind::communication) << n.label;
    } else if (n.what == op_handle::kind::computation) {
      EXPECT_EQ(n.runs_on, stream_kind::compute) << n.label;
    }
  }
  EXPECT_EQ(optimizers, 2 * 4); // two layers' weight and bias, on each place
  EXPECT_EQ(collectives, 4);
}

TEST(StepGraphStreams, OnCpuPlacesAndOnOneGpuPlaceEveryComputationRunsOnTheComputeStream) {
  std::vector<std::unique_ptr<device>> cpus;
  cpus.push_back(open_device(place::cpu(0)));
  cpus.push_back(open_device(place::cpu(1)));
  std::vector<std::unique_ptr<device>> one_gpu;
  one_gpu.push_back(std::make_unique<testing::host_gpu_device>(place::gpu(0)));
  for (auto* places : {&cpus, &one_gpu}) {
    streams_of_a_step s(std::move(*places));
    int optimizers = 0;
    for (const step_node& n : s.graph->nodes()) {
      if (n.what != op_handle::kind::computation) continue;
      optimizers += n.type == "sgd";
      EXPECT_EQ(n.runs_on, stream_kind::compute) << n.label;
    }
    EXPECT_EQ(optimizers, 4 * static_cast<int>(s.devices.size()));
  }
}

} // namespace
} // namespace pe
