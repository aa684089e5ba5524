// The executor's GPU paths on the host, through a GPU place simulated there
// (tests/support/host_gpu_device.hpp: the GPU places' queued streams, running the CPU
// kernels): the startup program staged on the host and copied in, feeds over the copy
// stream, the loss-gradient scale and fetches as device copies, host_value(), a kernel
// error and a --check-nan-inf failure reaching the caller, logical places exchanging through the GPU collectives' meeting
// (collective_rendezvous, sums on the host), and traces whose spans come from the device
// clock, collectives' joined over their ranks, and pass the hazard checker; with the device
// lagging behind the launches, steps (failed ones too) end with it idle. Runs everywhere;
// what only a real GPU shows is in the gpu_* tests.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/hazard_check.hpp"
#include "actors/parallel_executor.hpp"
#include "actors/trace.hpp"
#include "actors/trace_export.hpp"
#include "core/error.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/models/cnn.hpp"
#include "graph/models/mlp.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/host_gpu_device.hpp"

namespace pe {
namespace {

class HostGpuExecutor : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::simulate_gpu_places(); }
  /// Tests that make the simulated devices lag leave them as they found them.
  void TearDown() override { testing::set_simulated_device_lag(std::chrono::nanoseconds(0)); }

  model_programs m = [] {
    mlp_config c;
    c.input_width = 16;
    c.hidden = {24, 12};
    c.classes = 4;
    c.optimizer = "adam";
    c.learning_rate = 0.01f;
    c.seed = 5;
    return build_mlp(c);
  }();

  feed_map feed(std::uint64_t seed) const {
    auto b = testing::argmax_batch(24, 16, 4, seed);
    return {{m.image, b.image}, {m.label, b.label}};
  }

  /// Runs `steps` steps (feeds from `seed` on) recording steps first..last: their events, and
  /// how many spans the simulated device read meanwhile.
  std::pair<std::vector<trace_event>, int> traced_run(parallel_executor& exe, std::uint64_t first,
                                                      std::uint64_t last, int steps, std::uint64_t seed) const {
    trace_recorder recorder(first, last);
    exe.trace(&recorder);
    const int read_before = testing::host_gpu_device::spans_read();
    for (int s = 0; s < steps; ++s) exe.run(feed(seed + static_cast<std::uint64_t>(s)), {m.loss});
    exe.trace(nullptr);
    return {recorder.events(), testing::host_gpu_device::spans_read() - read_before};
  }
};

TEST_F(HostGpuExecutor, OnlyWorkReadOnAnotherStreamIsFollowedByARecord) {
  // Each record is a cudaEventRecord on a GPU: the ops whose readers all run on the same
  // stream record nothing (stream order covers them), and the results stay the reference's.
  parallel_executor exe({place::gpu(0)}, m.startup, m.main);
  exe.run(feed(1), {m.loss});
  const int before = testing::host_gpu_device::markers_recorded();
  const float loss = exe.run(feed(2), {m.loss})[0].values<float>()[0];
  const int per_step = testing::host_gpu_device::markers_recorded() - before;
  const int ops = static_cast<int>(exe.graph().ops.size());
  // Left: the feeds' record, the loss's producer read by the fetch on the copy stream, the
  // loss-gradient scale's copy read by the compute stream, and the three streams' drains.
  EXPECT_LE(per_step, 8) << ops << " ops";
  EXPECT_GT(per_step, 0);
  scope reference;
  reference_executor(m.startup, reference).run({}, {});
  reference_executor cpu(m.main, reference);
  cpu.run(feed(1), {m.loss});
  EXPECT_NEAR(loss, cpu.run(feed(2), {m.loss})[0].values<float>()[0], 1e-5f);
}

TEST_F(HostGpuExecutor, TrainingOnASimulatedGpuPlaceEqualsTheReference) {
  for (sync_mode sync : {sync_mode::event, sync_mode::wait}) {
    SCOPED_TRACE(sync == sync_mode::event ? "--sync event" : "--sync wait");
    scope again;
    reference_executor(m.startup, again).run({}, {});
    reference_executor want(m.main, again);
    parallel_executor exe({place::gpu(0)}, m.startup, m.main, {}, {1, sync});
    for (int s = 0; s < 6; ++s) {
      const float expected = want.run(feed(700 + s), {m.loss})[0].values<float>()[0];
      const auto got = exe.run(feed(700 + s), {m.loss});
      ASSERT_EQ(got.size(), 1u);
      EXPECT_TRUE(got[0].where().type == place::kind::cpu); // fetched to the host
      EXPECT_EQ(got[0].values<float>()[0], expected) << "step " << s; // the same kernels, in order
    }
    for (const auto& v : m.main.blocks(0).vars()) {
      if (!v.is_parameter()) continue;
      const tensor got = exe.host_value(v.name(), 0);
      const auto a = got.values<float>();
      const auto b = again.get(v.name()).values<float>();
      ASSERT_EQ(a.size(), b.size()) << v.name();
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << v.name() << "[" << i << "]";
    }
  }
}

TEST_F(HostGpuExecutor, AKernelErrorOnASimulatedGpuReachesTheCallerAndTheExecutorStaysUsable) {
  parallel_executor exe({place::gpu(0)}, m.startup, m.main);
  const feed_map good = feed(1);
  const tensor before = exe.host_value("fc_0.w_0", 0);
  feed_map bad = good;
  bad[m.label] = good.at(m.label).clone();
  bad[m.label].values<std::int64_t>()[3] = 9; // out of range for 4 classes
  try {
    exe.run(bad, {m.loss});
    FAIL() << "a bad label trained";
  } catch (const error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("on gpu:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("9"), std::string::npos) << msg;
  }
  const tensor after = exe.host_value("fc_0.w_0", 0);
  const auto a = after.values<float>(), b = before.values<float>();
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())); // nothing was updated
  EXPECT_NO_THROW(exe.run(good, {m.loss}));
}

TEST_F(HostGpuExecutor, AFailedStepReturnsOnlyOnceTheDeviceFinishedWhatItHadLaunched) {
  // A GPU runs kernels after their launch code returned. The simulated device here finishes
  // each piece of work a millisecond after its launch: run() must not return, even when a
  // launch failed, while the device still runs the step's earlier work, which the next
  // host_value, set_persistable or step would race with.
  parallel_executor exe({place::gpu(0, 0), place::gpu(1, 0)}, m.startup, m.main);
  testing::set_simulated_device_lag(std::chrono::milliseconds(1));
  exe.run(feed(1), {m.loss});
  EXPECT_TRUE(testing::simulated_devices_idle()) << "a step returned before its device work finished";
  feed_map bad = feed(2);
  bad[m.label].values<std::int64_t>()[20] = 9; // out of range for 4 classes: place 1's loss launch throws
  trace_recorder recorder;
  exe.trace(&recorder);
  EXPECT_THROW(exe.run(bad, {m.loss}), error);
  EXPECT_TRUE(testing::simulated_devices_idle()) << "run() threw while the failed step's work still ran";
  const std::size_t told = recorder.events().size();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(recorder.events().size(), told) << "trace spans were told after run() returned";
  exe.trace(nullptr);
  EXPECT_NO_THROW((void)exe.host_value("fc_0.w_0", 1));
  EXPECT_NO_THROW(exe.run(feed(3), {m.loss}));
  EXPECT_TRUE(testing::simulated_devices_idle());
  // A value that cannot be copied in is refused, and leaves no error behind for the next step.
  EXPECT_THROW(exe.set_persistable("fc_0.w_0", tensor()), error);
  EXPECT_NO_THROW(exe.set_persistable("fc_0.w_0", exe.host_value("fc_0.w_0", 0)));
  EXPECT_NO_THROW(exe.run(feed(4), {m.loss}));
}

TEST_F(HostGpuExecutor, TracedSpansComeFromTheDeviceClockAndPassTheHazardChecker) {
  // The device finishes each piece of work 300 us after its launch: spans are its times.
  testing::set_simulated_device_lag(std::chrono::microseconds(300));
  parallel_executor exe({place::gpu(0)}, m.startup, m.main);
  const auto [events, spans_read] = traced_run(exe, 2, 4, 5, 40);
  // Every firing of steps 2..4, each span read from the device's markers by its stream.
  ASSERT_EQ(events.size(), 3 * exe.graph().ops.size());
  EXPECT_EQ(spans_read, static_cast<int>(events.size()));
  std::size_t launched = 0;
  for (const trace_event& e : events) {
    EXPECT_LE(e.start_ns, e.end_ns);
    EXPECT_LE(e.enqueued_ns, e.start_ns); // launched by the actor before it ran
    if (e.launch_end_ns == 0) continue;
    // The stream's thread ran the launch code after the actor enqueued it; the device
    // (300 us behind) finished its work after that.
    ++launched;
    EXPECT_LE(e.enqueued_ns, e.launch_start_ns);
    EXPECT_LE(e.launch_start_ns, e.launch_end_ns);
    EXPECT_LE(e.launch_end_ns, e.end_ns);
  }
  EXPECT_EQ(launched, events.size()); // one place: every firing is a task on its stream
  for (const auto& v : check_hazards({exe.graph(), exe.program(), exe.place_names()}, events))
    ADD_FAILURE() << v.message;
  // The Chrome trace carries the launch beside the device span.
  std::stringstream out;
  write_chrome_trace(out, {exe.graph(), exe.program(), exe.place_names()}, events);
  std::size_t with_launch = 0;
  const auto doc = nlohmann::json::parse(out.str());
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X" || !e["args"].contains("launched_us")) continue;
    ++with_launch;
    EXPECT_GE(e["args"]["launch_us"].get<double>(), 0.0);
    EXPECT_LE(e["args"]["launched_us"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  }
  EXPECT_EQ(with_launch, events.size());
}

/// Two logical places on simulated GPU 0, or two CPU places.
std::vector<place> two_places(place::kind kind) {
  if (kind == place::kind::cpu) return {place::cpu(0), place::cpu(1)};
  return {place::gpu(0, 0), place::gpu(1, 0)};
}

TEST_F(HostGpuExecutor, CheckNanInfOnSimulatedGpuPlacesNamesTheOpPlaceAndVariable) {
  // The finite check is that of the place's kernels (the CPU's here: the simulated place runs
  // CPU kernels), called after each kernel on the place's compute stream.
  for (sync_mode sync : {sync_mode::event, sync_mode::wait}) {
    SCOPED_TRACE(sync == sync_mode::event ? "--sync event" : "--sync wait");
    execution_strategy exec;
    exec.sync = sync;
    exec.check_nan_inf = true;
    parallel_executor exe(two_places(place::kind::gpu), m.startup, m.main, {}, exec);
    EXPECT_NO_THROW(exe.run(feed(5), {m.loss}));
    const tensor before = exe.host_value("fc_0.w_0", 0);
    feed_map bad = feed(6);
    bad[m.image] = bad.at(m.image).clone();
    bad[m.image].values<float>()[23 * 16 + 2] = std::numeric_limits<float>::infinity(); // place 1's rows
    testing::expect_error([&] { exe.run(bad, {m.loss}); },
                          {"op #0 (mul) on gpu:1@dev0", "output variable 'fc_0.tmp_0'", "inf at element",
                           "(--check-nan-inf)"});
    const tensor after = exe.host_value("fc_0.w_0", 0);
    const auto a = after.values<float>(), b = before.values<float>();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())); // the failed step updated nothing
    EXPECT_NO_THROW(exe.run(feed(7), {m.loss}));
  }
}

TEST_F(HostGpuExecutor, LogicalPlacesExchangeThroughTheGpuCollectivesMeetingAsCpuPlacesDo) {
  for (auto mode : {build_strategy::reduce_mode::all_reduce, build_strategy::reduce_mode::reduce}) {
    SCOPED_TRACE(mode == build_strategy::reduce_mode::reduce ? "reduce mode" : "all-reduce mode");
    // In reduce mode the simulated devices lag: every step must still end with them idle.
    const bool lag = mode == build_strategy::reduce_mode::reduce;
    testing::set_simulated_device_lag(std::chrono::microseconds(lag ? 200 : 0));
    build_strategy build;
    build.reduce = mode;
    parallel_executor gpus(two_places(place::kind::gpu), m.startup, m.main, build);
    parallel_executor cpus(two_places(place::kind::cpu), m.startup, m.main, build);
    for (int s = 0; s < 5; ++s) {
      const float want = cpus.run(feed(300 + s), {m.loss})[0].values<float>()[0];
      const float got = gpus.run(feed(300 + s), {m.loss})[0].values<float>()[0];
      EXPECT_NEAR(got, want, 1e-6f * std::abs(want)) << "step " << s;
      EXPECT_TRUE(testing::simulated_devices_idle()) << "step " << s << " returned before its device work ended";
    }
    for (int p = 0; p < 2; ++p) {
      const tensor got = gpus.host_value("fc_1.w_0", p);
      const auto a = got.values<float>(), b = cpus.place_scope(p).get("fc_1.w_0").values<float>();
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6f) << "place " << p << " [" << i << "]";
    }
  }
}

TEST_F(HostGpuExecutor, TheCnnOnTwoSimulatedGpuPlacesTrainsAsOnTwoCpuPlacesUnderBothSyncModes) {
  // conv2d, batch_norm (its running statistics updated in place) and pool2d, with momentum.
  cnn_config c;
  c.image_side = 12;
  c.channels = {4, 6};
  c.fc = {16};
  c.classes = 5;
  const model_programs cnn = build_cnn(c);
  auto images = [&](std::uint64_t seed) {
    auto b = testing::argmax_batch(8, 12 * 12, 5, seed);
    tensor image(dtype::fp32, {8, 1, 12, 12});
    std::copy_n(b.image.values<float>().begin(), image.numel(), image.values<float>().begin());
    return feed_map{{cnn.image, image}, {cnn.label, b.label}};
  };
  for (sync_mode sync : {sync_mode::event, sync_mode::wait}) {
    SCOPED_TRACE(sync == sync_mode::event ? "--sync event" : "--sync wait");
    // Under --sync wait the simulated devices lag: op actors then block on work the device
    // has not finished yet, as on a GPU.
    testing::set_simulated_device_lag(std::chrono::microseconds(sync == sync_mode::wait ? 100 : 0));
    parallel_executor gpus(two_places(place::kind::gpu), cnn.startup, cnn.main, {}, {1, sync});
    parallel_executor cpus(two_places(place::kind::cpu), cnn.startup, cnn.main, {}, {1, sync});
    for (int s = 0; s < 4; ++s) {
      const float want = cpus.run(images(90 + s), {cnn.loss})[0].values<float>()[0];
      const float got = gpus.run(images(90 + s), {cnn.loss})[0].values<float>()[0];
      EXPECT_NEAR(got, want, 1e-5f * std::max(1.f, std::abs(want))) << "step " << s;
      EXPECT_TRUE(testing::simulated_devices_idle()) << "step " << s << " returned before its device work ended";
    }
    int statistics = 0; // scale, bias, mean and variance of both batch_norms
    for (const auto& v : cnn.main.blocks(0).vars()) {
      if (!v.persistable() || v.name().find("batch_norm") == std::string::npos) continue;
      ++statistics;
      const tensor got = gpus.host_value(v.name(), 1);
      const auto a = got.values<float>(), b = cpus.place_scope(1).get(v.name()).values<float>();
      ASSERT_EQ(a.size(), b.size()) << v.name();
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f) << v.name() << "[" << i << "]";
    }
    EXPECT_GE(statistics, 8);
  }
}

TEST_F(HostGpuExecutor, ATimedCollectiveJoinsItsRanksDeviceSpansAndTheHazardCheckerPasses) {
  testing::set_simulated_device_lag(std::chrono::microseconds(300));
  parallel_executor exe(two_places(place::kind::gpu), m.startup, m.main);
  const auto [events, spans_read] = traced_run(exe, 2, 3, 4, 60);
  ASSERT_EQ(events.size(), 2 * exe.graph().ops.size());
  std::size_t collectives = 0;
  for (const trace_event& e : events)
    if (is_collective(exe.graph().ops[static_cast<std::size_t>(e.op)].what)) ++collectives;
  EXPECT_GT(collectives, 0u);
  // One span per op and place of its own, and a collective's one per rank, joined into one event.
  EXPECT_EQ(spans_read, static_cast<int>(events.size() + collectives));
  for (const auto& v : check_hazards({exe.graph(), exe.program(), exe.place_names()}, events))
    ADD_FAILURE() << v.message;
}

} // namespace
} // namespace pe
