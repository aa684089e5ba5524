// pe-actor-run --cuda-graphs: shown in --help; refused, naming why, where CUDA graphs cannot
// run (CPU places, --executor reference, --sync wait, --check-nan-inf). Its runs on a GPU are
// gpu_graphs_test's and scripts/gpu_check.sh's.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "idx_files.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using testing::run_binary;
using testing::temp_dir;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CliCudaGraphs, HelpDescribesTheFlag) {
  temp_dir dir("cli_cuda_graphs_help");
  const auto r = run_binary(testing::pe_actor_run_binary(), "--help", dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "--cuda-graphs")) << r.out;
  EXPECT_TRUE(has(r.out, "GPU places of one GPU")) << r.out;
}

TEST(CliCudaGraphs, RefusedWhereGraphsCannotRun) {
  temp_dir dir("cli_cuda_graphs_refused");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--cuda-graphs --steps 2", "CUDA graphs (--cuda-graphs) cannot run here: cpu:0 is not a GPU place"},
      {"--cuda-graphs --places cpu:2 --steps 2", "cannot run here: cpu:0 is not a GPU place"},
      {"--cuda-graphs --sync wait --steps 2", "cannot run here: --sync wait makes the host wait between kernels"},
      {"--cuda-graphs --check-nan-inf --steps 2", "cannot run here: --check-nan-inf is on"},
      {"--cuda-graphs --executor reference --steps 2", "--cuda-graphs, --sync-batch-norm, --pin-places, --actor-per-op and --no-overlap-steps configure the actor executor"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_binary(testing::pe_actor_run_binary(), args, dir.path());
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_TRUE(has(r.err, message)) << args << ": " << r.err;
    EXPECT_TRUE(has(r.err, "pe-actor-run: error: ")) << args << ": " << r.err;
  }
}

} // namespace
} // namespace pe
