// The GPU forms of --places (apps/run/gpu_places.hpp) against a given inventory of CUDA devices,
// so every case runs without a GPU; and the real inventory of this machine.
#include <gtest/gtest.h>

#include "apps/run/gpu_places.hpp"
#include "core/error.hpp"
#include "devices/device.hpp"

namespace pe {
namespace {

gpu_inventory gpus(int count) {
  gpu_inventory g;
  g.built = true;
  g.count = count;
  if (count == 0) g.problem = "no usable CUDA driver (cudaGetDeviceCount: cudaErrorInsufficientDriver)";
  return g;
}

std::string error_of(const std::string& text, const gpu_inventory& inv) {
  try {
    parse_gpu_places(text, inv);
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

TEST(GpuPlaces, OnePlacePerListedDevice) {
  auto p = parse_gpu_places("gpu:0", gpus(1));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], place::gpu(0));
  EXPECT_EQ(to_string(p[0]), "gpu:0");

  p = parse_gpu_places("gpu:1,0", gpus(2));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0], place::gpu(0, 1)); // place 0 runs on device 1
  EXPECT_EQ(p[1], place::gpu(1, 0));
  EXPECT_EQ(to_string(p[0]), "gpu:0@dev1");
}

TEST(GpuPlaces, AllIsEveryVisibleDevice) {
  auto p = parse_gpu_places("gpu:all", gpus(3));
  ASSERT_EQ(p.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(p[static_cast<std::size_t>(i)], place::gpu(i));
}

TEST(GpuPlaces, LogicalPlacesShareADevice) {
  auto p = parse_gpu_places("gpu:0x4", gpus(1));
  ASSERT_EQ(p.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(p[static_cast<std::size_t>(i)].index, i);
    EXPECT_EQ(p[static_cast<std::size_t>(i)].device, 0);
    EXPECT_EQ(p[static_cast<std::size_t>(i)].type, place::kind::gpu);
  }
  EXPECT_EQ(to_string(p[2]), "gpu:2@dev0");
  EXPECT_EQ(gpu_places_text(p), "gpu:0x4");

  p = parse_gpu_places("gpu:0x2,1x2", gpus(2));
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[3], place::gpu(3, 1));
  EXPECT_EQ(gpu_places_text(p), "gpu:0x2,1x2");
  EXPECT_EQ(gpu_places_text(parse_gpu_places("gpu:0,1", gpus(2))), "gpu:0,1");
  EXPECT_EQ(gpu_places_text(parse_gpu_places("gpu:0x1", gpus(1))), "gpu:0");
}

TEST(GpuPlaces, CpuPlacesAreUnchanged) {
  EXPECT_EQ(place::cpu(3), (place{place::kind::cpu, 3, 0}));
  EXPECT_EQ(to_string(place::cpu(3)), "cpu:3");
  EXPECT_FALSE(place::cpu(0) == place::gpu(0));
  EXPECT_EQ(to_string(place::gpu(2)), "gpu:2");
}

TEST(GpuPlaces, RejectsBadSyntax) {
  for (const char* text : {"gpu:", "gpu:x", "gpu:-1", "gpu:0,", "gpu:,0", "gpu:0x", "gpu:0x0",
                           "gpu:0x-2", "gpu:0y2", "gpu:all,0", "gpu:allx2", "gpu: 0", "gpu:1e3",
                           "gpu:999999", "gpu:0x2x2"})
    EXPECT_NE(error_of(text, gpus(4)).find("--places: expected gpu:all, gpu:N[,M...]"),
              std::string::npos)
        << text << ": " << error_of(text, gpus(4));
}

TEST(GpuPlaces, RejectsADeviceListedTwice) {
  auto message = error_of("gpu:0,1,0", gpus(2));
  EXPECT_NE(message.find("CUDA device 0 is listed twice"), std::string::npos) << message;
  EXPECT_NE(message.find("gpu:0xK"), std::string::npos) << message;
}

TEST(GpuPlaces, NamesWhatIsMissing) {
  auto message = error_of("gpu:0", gpus(0));
  EXPECT_EQ(message, "--places gpu:0: no usable CUDA driver (cudaGetDeviceCount: "
                     "cudaErrorInsufficientDriver)");
  EXPECT_NE(error_of("gpu:all", gpus(0)).find("no usable CUDA driver"), std::string::npos);

  message = error_of("gpu:0,2", gpus(2));
  EXPECT_NE(message.find("--places gpu:0,2: no CUDA device 2 (this process sees 2 CUDA devices"),
            std::string::npos)
      << message;
  message = error_of("gpu:1x2", gpus(1));
  EXPECT_NE(message.find("no CUDA device 1 (this process sees 1 CUDA device,"), std::string::npos)
      << message;

  gpu_inventory none;
  none.problem = "GPU places need the CUDA build";
  EXPECT_NE(error_of("gpu:0", none).find("GPU places need the CUDA build"), std::string::npos);
}

TEST(GpuPlaces, ThisMachinesInventoryIsConsistent) {
  const gpu_inventory inv = query_gpus();
  EXPECT_EQ(inv.built, gpu_build());
  if (inv.count > 0) {
    EXPECT_TRUE(inv.problem.empty()) << inv.problem;
    EXPECT_EQ(parse_gpu_places("gpu:all", inv).size(), static_cast<std::size_t>(inv.count));
  } else {
    EXPECT_FALSE(inv.problem.empty());
    if (inv.built) { // the driver or the device is what is missing, and the message says so
      EXPECT_TRUE(inv.problem.find("driver") != std::string::npos ||
                  inv.problem.find("device") != std::string::npos ||
                  inv.problem.find("GPU") != std::string::npos)
          << inv.problem;
    }
    // Opening a GPU place fails with the same reason, naming the place.
    try {
      open_device(place::gpu(0));
      FAIL() << "gpu:0 opened without a GPU";
    } catch (const error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("gpu:0"), std::string::npos) << what;
      if (inv.built) {
        EXPECT_NE(what.find(inv.problem), std::string::npos) << what;
      }
    }
  }
}

} // namespace
} // namespace pe
