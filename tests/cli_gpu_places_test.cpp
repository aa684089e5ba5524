// pe-actor-run --places gpu:... on this machine: without a usable GPU (no CUDA build, no
// driver, no device) each form is one clear error line, exit 2; --help tells the truth.
#include <algorithm>

#include <gtest/gtest.h>

#include "devices/gpu_runtime.hpp"
#include "idx_files.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using testing::run_result;
using testing::temp_dir;

run_result run(const std::string& args, const temp_dir& dir, const std::string& env = "") {
  return testing::run_binary(pe::testing::pe_actor_run_binary(), args, dir.path(), env);
}

void expect_one_error(const run_result& r, const std::string& fragment) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(r.err.starts_with("pe-actor-run: error: --places")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

TEST(CliGpuPlaces, WithoutAGpuEachFormNamesWhatIsMissing) {
  const gpu_inventory inv = query_gpus();
  if (inv.count > 0) GTEST_SKIP() << "this machine has " << inv.count << " GPU(s)";
  temp_dir dir("cli_gpu_places");
  // Without the CUDA build the message says so; with it, it names the driver or device.
  const std::string missing = inv.built ? inv.problem : "GPU places need the CUDA build";
  for (const char* places : {"gpu:0", "gpu:0,1", "gpu:all", "gpu:0x4"}) {
    SCOPED_TRACE(places);
    expect_one_error(run("--steps 1 --places " + std::string(places), dir), missing);
  }
  if (inv.built) {
    const auto r = run("--steps 1 --places gpu:0", dir);
    EXPECT_TRUE(r.err.find("driver") != std::string::npos ||
                r.err.find("device") != std::string::npos)
        << r.err;
  }
}

TEST(CliGpuPlaces, HidingEveryDeviceIsNoDevice) {
  if (!gpu_build()) GTEST_SKIP() << "no CUDA build";
  temp_dir dir("cli_gpu_places_hidden");
  // CUDA_VISIBLE_DEVICES hides every GPU (where there are some) or leaves none to show.
  const auto r = run("--steps 1 --places gpu:all", dir, "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(r.err.starts_with("pe-actor-run: error: --places gpu:all: ")) << r.err;
}

TEST(CliGpuPlaces, BadSyntaxIsRefusedBeforeAnyDeviceIsAsked) {
  temp_dir dir("cli_gpu_places_syntax");
  expect_one_error(run("--steps 1 --places gpu:zero", dir),
                   "--places: expected gpu:all, gpu:N[,M...] (CUDA devices) or gpu:NxK");
  expect_one_error(run("--steps 1 --places gpu:0,0", dir), "CUDA device 0 is listed twice");
}

TEST(CliGpuPlaces, HelpTellsWhatThisBuildHas) {
  temp_dir dir("cli_gpu_places_help");
  const auto r = run("--help", dir);
  EXPECT_EQ(r.status, 0) << r.err;
  if (gpu_build()) {
    EXPECT_NE(r.out.find("gpu:NxK"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << r.out;
  } else {
    EXPECT_NE(r.out.find("(gpu:...)"), std::string::npos) << r.out;
  }
}

} // namespace
} // namespace pe
