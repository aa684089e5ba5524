// Device kinds by name (core/device_kind.hpp): the built-in kinds, defining a new one, and a
// kind added by registration alone (its name, its device factory, its communicator and its
// inventory; no enum, parser or executor edited) that reads from a place list as
// pe-actor-run's --places does and trains as CPU places do. The added kind's places are
// simulated on the host (tests/support/host_gpu_device.hpp).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "core/device_kind.hpp"
#include "core/place_list.hpp"
#include "devices/device.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/host_gpu_device.hpp"

namespace pe {
namespace {

TEST(DeviceKind, TheBuiltInKindsHaveTheirNamesAndForms) {
  EXPECT_EQ(device_kind::cpu.name(), "cpu");
  EXPECT_EQ(device_kind::gpu.name(), "gpu");
  EXPECT_EQ(device_kind::cpu.form(), place_form::replicas);
  EXPECT_EQ(device_kind::gpu.form(), place_form::devices);
  EXPECT_EQ(device_kind::find("gpu"), device_kind::gpu);
  EXPECT_EQ(device_kind{}, device_kind::cpu);
  EXPECT_NE(device_kind::cpu, device_kind::gpu);
  EXPECT_FALSE(device_kind::find("tpu").has_value());
  EXPECT_FALSE(device_kind::find("").has_value());
  const auto all = device_kind::all();
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[0], device_kind::cpu);
  EXPECT_EQ(all[1], device_kind::gpu);
}

TEST(DeviceKind, DefiningANameTwiceGivesOneKindAndBadNamesAreRefused) {
  const device_kind a = device_kind::define("kindtest_a", place_form::devices, "test device");
  EXPECT_EQ(device_kind::define("kindtest_a", place_form::devices, "test device"), a);
  EXPECT_EQ(device_kind::find("kindtest_a"), a);
  EXPECT_NE(a, device_kind::gpu);
  EXPECT_EQ(a.name(), "kindtest_a");
  EXPECT_EQ(a.hardware(), "test device");
  testing::expect_error([] { device_kind::define("kindtest_a", place_form::replicas, "x"); },
                        {"device kind 'kindtest_a' is defined already, with another place form"});
  for (const char* bad : {"", "GPU", "9pu", "g-pu", "g:pu", "g pu"})
    testing::expect_error([&] { device_kind::define(bad, place_form::devices, "x"); },
                          {"a kind's name is [a-z][a-z0-9_]*"});
}

TEST(DeviceKind, ADefinedKindIsWrittenInPlaceListsAsGpuPlacesAre) {
  const device_kind k = device_kind::define("kindtest_b", place_form::devices, "test device");
  const std::string text = "kindtest_b:0x2,1";
  const auto places = list_places(parse_place_list(text), text, {2, "", "numbered from 0"});
  ASSERT_EQ(places.size(), 3u);
  EXPECT_EQ(places[1], (place{k, 1, 0}));
  EXPECT_EQ(places[2], (place{k, 2, 1}));
  EXPECT_EQ(to_string(places[1]), "kindtest_b:1@dev0");
  EXPECT_EQ(place_list_text(places), text);
  EXPECT_EQ(parse_place_name("kindtest_b:1"), (place{k, 1, 1}));
  testing::expect_error([&] { list_places(parse_place_list("kindtest_b:3"), "kindtest_b:3", {2, "", "numbered from 0"}); },
                        {"--places kindtest_b:3: no test device 3 (this process sees 2 test devices, numbered from 0)"});
  testing::expect_error([] { parse_place_list("kindtest_b:0y"); },
                        {"--places: expected kindtest_b:all, kindtest_b:N[,M...] (test devices) or kindtest_b:NxK"});
  // A kind with no inventory registered has no devices, and the message says so.
  testing::expect_error([&] { list_places(parse_place_list(text), text, device_inventory_of(k)); },
                        {"--places kindtest_b:0x2,1: this build has no kindtest_b devices"});
  // A replicas kind: N places sharing the host.
  const device_kind r = device_kind::define("kindtest_r", place_form::replicas, "test replica");
  const auto replicas = list_places(parse_place_list("kindtest_r:3"), "kindtest_r:3", {});
  ASSERT_EQ(replicas.size(), 3u);
  EXPECT_EQ(replicas[2], (place{r, 2, 0}));
  EXPECT_EQ(place_list_text(replicas), "kindtest_r:3");
  testing::expect_error([] { parse_place_list("kindtest_r:0"); },
                        {"--places: expected kindtest_r:N with N >= 1 test replicas, got 'kindtest_r:0'"});
}

TEST(DeviceKind, AKindAddedByRegistrationAloneTrainsAsCpuPlacesDo) {
  // Everything a new device kind's folder does: define its name, register its device,
  // communicator and inventory. Nothing else in the engine is told about it.
  const device_kind sim = device_kind::define("kindtest_sim", place_form::devices, "simulated device");
  testing::simulate_places_of(sim);
  register_device_inventory(sim, [] { return device_inventory{1, "", "numbered from 0"}; });

  const std::string text = "kindtest_sim:0x2";
  const std::vector<place> places = list_places(parse_place_list(text), text, device_inventory_of(sim));
  ASSERT_EQ(places.size(), 2u);
  EXPECT_EQ(places[0].type, sim);

  const model_programs m = testing::argmax_mlp("adam", 0.01f);
  parallel_executor added(places, m.startup, m.main);
  parallel_executor cpus(make_cpu_places(2), m.startup, m.main);
  EXPECT_EQ(added.place_names(), (std::vector<std::string>{"kindtest_sim:0", "kindtest_sim:1@dev0"}));
  for (int s = 0; s < 4; ++s) {
    const feed_map feed = testing::argmax_feed(m, 24, 40 + static_cast<std::uint64_t>(s));
    const float want = cpus.run(feed, {m.loss})[0].values<float>()[0];
    const float got = added.run(feed, {m.loss})[0].values<float>()[0];
    EXPECT_NEAR(got, want, 1e-6f * std::abs(want)) << "step " << s;
  }
  const tensor got = added.host_value("fc_1.w_0", 1);
  const auto a = got.values<float>(), b = cpus.place_scope(1).get("fc_1.w_0").values<float>();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6f) << "[" << i << "]";
}

} // namespace
} // namespace pe
