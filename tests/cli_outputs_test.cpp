// pe-actor-run checks every output it was asked for before it loads any data: an unwritable
// --metrics, --trace, --dot, --save-program, --save-params or --output fails at once.
#include <filesystem>
#include <set>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

#include "idx_files.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

namespace fs = std::filesystem;
using testing::temp_dir;

/// Every path under `dir`.
std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> paths;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    paths.insert(entry.path().string());
  return paths;
}

/// Outputs in `outputs` (with a file `blocker` and a directory `taken` in it), the run's own
/// stdout and stderr elsewhere, so that the test sees exactly what the run left behind.
class CliOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_file(outputs_.file("blocker"), "not a directory");
    fs::create_directories(outputs_.path() / "taken");
  }

  /// Runs pe-actor-run with `args` on data that does not exist, so a run that got past the
  /// output checks would fail on the data instead; expects status 2 and one error line
  /// holding `message`, no training and nothing new in `outputs_`.
  void expect_refused(const std::string& args, const std::string& message) {
    const auto before = listing(outputs_.path());
    auto r = testing::run_binary(pe::testing::pe_actor_run_binary(), args, scratch_.path());
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_TRUE(r.err.starts_with("pe-actor-run: error: " + message)) << r.err;
    EXPECT_EQ(r.err.find("/nonexistent/data"), std::string::npos) << "data loaded first: " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(listing(outputs_.path()), before) << "the check left files behind";
  }

  std::string out(const std::string& name) const { return outputs_.file(name); }

  const std::string training = "--steps 1 --data idx:/nonexistent/data ";
  temp_dir outputs_{"cli_outputs"};

 private:
  temp_dir scratch_{"cli_outputs_scratch"};
};

TEST_F(CliOutputs, FileInAMissingDirectory) {
  for (const std::string flag : {"--metrics", "--trace", "--dot"}) {
    const auto path = out("missing/file");
    expect_refused(training + flag + " " + path,
                   flag + " " + path + ": the directory " + out("missing") + " does not exist");
  }
}

TEST_F(CliOutputs, FileThatIsADirectory) {
  for (const std::string flag : {"--metrics", "--trace", "--dot"})
    expect_refused(training + flag + " " + out("taken"),
                   flag + " " + out("taken") + ": is a directory; expected a file name");
}

TEST_F(CliOutputs, FileUnderAFile) {
  const auto path = out("blocker/metrics.json");
  expect_refused(training + "--metrics " + path,
                 "--metrics " + path + ": " + out("blocker") + " is not a directory");
}

TEST_F(CliOutputs, FileInAReadOnlyDirectory) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root writes into read-only directories";
  const fs::path locked = out("locked");
  fs::create_directories(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  const auto path = (locked / "metrics.json").string();
  expect_refused(training + "--metrics " + path,
                 "--metrics " + path + ": cannot create a file in " + locked.string());
  fs::permissions(locked, fs::perms::owner_all);
}

TEST_F(CliOutputs, DirectoryUnderAFile) {
  const auto path = out("blocker/dir");
  for (const std::string flag : {"--save-program", "--save-params"})
    expect_refused(training + flag + " " + path,
                   flag + " " + path + ": cannot create the directory");
  expect_refused("--infer --model m.pdmodel --params p --data npy:/nonexistent/data --output " +
                     path,
                 "--output " + path + ": cannot create the directory");
}

TEST_F(CliOutputs, WritableOutputsPassTheCheck) {
  // The same outputs in places that can take them: the run gets as far as the data.
  auto r = testing::run_binary(pe::testing::pe_actor_run_binary(),
                               training + "--metrics " + out("m.json") + " --dot " +
                                   out("g.dot") + " --trace " + out("t.json") +
                                   " --save-program " + out("programs") + " --save-params " +
                                   out("params"),
                               outputs_.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("/nonexistent/data"), std::string::npos) << r.err;
  // Directories the run writes anyway exist now; no probe file or file output does.
  EXPECT_TRUE(fs::is_empty(out("programs")));
  EXPECT_TRUE(fs::is_empty(out("params")));
  for (const char* name : {"m.json", "g.dot", "t.json", ".params.partial"})
    EXPECT_FALSE(fs::exists(out(name))) << name;
}

} // namespace
} // namespace pe
