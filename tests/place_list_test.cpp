// The place-list parser pe-actor-run's --places and the Python package's place names share
// (core/place_list.hpp): every valid form, every error message, and the text it reads back.
// GPU lists are checked against given device counts, so every case runs without a GPU.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/place_list.hpp"

namespace pe {
namespace {

const std::string no_driver = "no usable CUDA driver (cudaGetDeviceCount: cudaErrorInsufficientDriver)";

/// The places of `text` with `gpus` visible CUDA devices.
std::vector<place> places_of(const std::string& text, int gpus = 4) {
  return list_places(parse_place_list(text), text,
                     {gpus, gpus == 0 ? no_driver : "", "numbered from 0 after CUDA_VISIBLE_DEVICES"});
}

/// The message parsing and listing `text` throws; empty when it throws nothing.
std::string error_of(const std::string& text, int gpus = 4) {
  try {
    places_of(text, gpus);
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

TEST(PlaceList, CpuCountIsThatManyCpuPlaces) {
  const place_list list = parse_place_list("cpu:3");
  EXPECT_EQ(list.type, place::kind::cpu);
  EXPECT_EQ(list.replica_count, 3);
  EXPECT_EQ(places_of("cpu:3"), (std::vector<place>{place::cpu(0), place::cpu(1), place::cpu(2)}));
  EXPECT_EQ(places_of("cpu:007").size(), 7u); // leading zeros, as --places always read them
  EXPECT_EQ(places_of("cpu:2", 0).size(), 2u); // CPU places ask nothing of the GPUs
}

TEST(PlaceList, GpuFormsInOrder) {
  EXPECT_EQ(places_of("gpu:0"), std::vector<place>{place::gpu(0)});
  EXPECT_EQ(places_of("gpu:1,0"), (std::vector<place>{place::gpu(0, 1), place::gpu(1, 0)}));
  EXPECT_EQ(places_of("gpu:all", 3),
            (std::vector<place>{place::gpu(0), place::gpu(1), place::gpu(2)}));
  EXPECT_EQ(places_of("gpu:0x2,1x2"), (std::vector<place>{place::gpu(0, 0), place::gpu(1, 0),
                                                          place::gpu(2, 1), place::gpu(3, 1)}));
  EXPECT_EQ(places_of("gpu:2x1"), std::vector<place>{place::gpu(0, 2)});

  const place_list list = parse_place_list("gpu:3,0x2");
  EXPECT_EQ(list.type, place::kind::gpu);
  EXPECT_FALSE(list.all_devices);
  ASSERT_EQ(list.items.size(), 2u);
  EXPECT_EQ(list.items[0].device, 3);
  EXPECT_EQ(list.items[0].count, 1);
  EXPECT_EQ(list.items[1].device, 0);
  EXPECT_EQ(list.items[1].count, 2);
  EXPECT_TRUE(parse_place_list("gpu:all").all_devices);
  EXPECT_TRUE(parse_gpu_place_list("gpu:all").all_devices);
}

TEST(PlaceList, RejectsBadCpuSyntax) {
  for (const char* text : {"cpu:0", "cpu:", "cpu:-1", "cpu:+2", "cpu: 2", "cpu:2x", "cpu:1,2",
                           "cpu:99999999999", "cpu", "2", "", "CPU:2", "tpu:1", "gpu"})
    EXPECT_EQ(error_of(text), "--places: expected cpu:N with N >= 1 CPU places, got '" +
                                  std::string(text) + "'")
        << text;
}

TEST(PlaceList, RejectsBadGpuSyntax) {
  for (const char* text : {"gpu:", "gpu:x", "gpu:-1", "gpu:-0", "gpu:0,", "gpu:,0", "gpu:0x",
                           "gpu:0x0", "gpu:0x-2", "gpu:0y2", "gpu:all,0", "gpu:allx2", "gpu: 0",
                           "gpu:1e3", "gpu:999999", "gpu:0x2x2", "gpu:0x123456", "gpu:ALL"})
    EXPECT_EQ(error_of(text), "--places: expected gpu:all, gpu:N[,M...] (CUDA devices) or gpu:NxK "
                              "(K places on device N), got '" + std::string(text) + "'")
        << text;
  // The GPU forms alone take no CPU list.
  try {
    parse_gpu_place_list("cpu:2");
    FAIL() << "cpu:2 parsed as GPU places";
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()), "--places: expected gpu:all, gpu:N[,M...] (CUDA devices) or "
                                     "gpu:NxK (K places on device N), got 'cpu:2'");
  }
}

TEST(PlaceList, RejectsADeviceListedTwiceBeforeAskingForGpus) {
  const std::string twice = "--places gpu:0,1,0: CUDA device 0 is listed twice (for several "
                            "places on one device write gpu:0xK)";
  EXPECT_EQ(error_of("gpu:0,1,0"), twice);
  EXPECT_EQ(error_of("gpu:0,1,0", 0), twice); // syntax first, then the devices
  EXPECT_NE(error_of("gpu:1x2,1").find("CUDA device 1 is listed twice"), std::string::npos);
}

TEST(PlaceList, NamesWhatIsMissing) {
  EXPECT_EQ(error_of("gpu:0", 0), "--places gpu:0: " + no_driver);
  EXPECT_EQ(error_of("gpu:all", 0), "--places gpu:all: " + no_driver);
  EXPECT_EQ(error_of("gpu:0,2", 2), "--places gpu:0,2: no CUDA device 2 (this process sees 2 CUDA devices, "
                                    "numbered from 0 after CUDA_VISIBLE_DEVICES)");
  EXPECT_EQ(error_of("gpu:1x2", 1), "--places gpu:1x2: no CUDA device 1 (this process sees 1 CUDA device, "
                                    "numbered from 0 after CUDA_VISIBLE_DEVICES)");
}

TEST(PlaceList, TextReadsBack) {
  EXPECT_EQ(place_list_text(places_of("cpu:2")), "cpu:2");
  EXPECT_EQ(place_list_text({}), "cpu:0");
  for (const char* text : {"gpu:0", "gpu:0,1", "gpu:1,0", "gpu:0x4", "gpu:0x2,1x2", "gpu:2,0x3"})
    EXPECT_EQ(place_list_text(places_of(text)), text);
  EXPECT_EQ(place_list_text(places_of("gpu:0x1")), "gpu:0");
  EXPECT_EQ(place_list_text(places_of("gpu:all", 2)), "gpu:0,1");
}

TEST(PlaceList, PlaceNames) {
  EXPECT_EQ(parse_place_name("cpu:0"), place::cpu(0));
  EXPECT_EQ(parse_place_name("cpu:12"), place::cpu(12));
  EXPECT_EQ(parse_place_name("gpu:1"), place::gpu(1));
  EXPECT_EQ(parse_place_name("gpu:99999"), place::gpu(99999));
  for (const char* name : {"cpu", "cpu:", "gpu:", "cpu:-1", "cpu:+1", "cpu:1:2", "gpu:0x2",
                           "gpu:all", "cpu: 1", "cpu:123456", "tpu:0", "CPU:0", "", ":0"})
    EXPECT_FALSE(parse_place_name(name).has_value()) << name;
}

TEST(PlaceList, CpuPlacesAreNumberedFromZero) {
  EXPECT_EQ(make_cpu_places(2), (std::vector<place>{place::cpu(0), place::cpu(1)}));
  EXPECT_TRUE(make_cpu_places(0).empty());
}

} // namespace
} // namespace pe
