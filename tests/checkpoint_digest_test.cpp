// Checkpoints that prove they are whole: checkpoint.json records every variable file's size
// and SHA-256; --load-params refuses a checkpoint whose files were altered, truncated,
// removed or added after the save, naming the file, and loads nothing; a save that fails
// part-way (a full disk: a small tmpfs in a mount namespace of its own) leaves the previous
// checkpoint intact and says so.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "apps/run/checkpoint.hpp"
#include "crypto/digest.hpp"
#include "idx_files.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::run_result;
using testing::slurp;
using testing::temp_dir;

const std::string setup = "--places cpu:1 --hidden 8 --batch-size 1000 --optimizer adam";

run_result run(const std::string& args, const temp_dir& dir) {
  return testing::run_binary(pe::testing::pe_actor_run_binary(), args, dir.path());
}

/// A checkpoint of 2 steps at dir/ckpt.
std::string saved(const temp_dir& dir) {
  const auto ckpt = dir.file("ckpt");
  const auto r = run(setup + " --steps 2 --save-params " + ckpt, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  return ckpt;
}

/// A resume from `ckpt` that must be refused with `message`, training nothing.
void refused(const std::string& ckpt, const std::string& message, const temp_dir& dir) {
  const auto r = run(setup + " --steps 4 --load-params " + ckpt, dir);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.err, "--load-params " + ckpt + ": ")) << r.err;
  EXPECT_TRUE(contains(r.err, message)) << r.err;
  EXPECT_TRUE(contains(r.err, "the checkpoint is not whole, so nothing was loaded")) << r.err;
  EXPECT_FALSE(contains(r.out, "step 3/")) << r.out;
}

TEST(CheckpointDigests, EveryFileIsRecordedAndAWholeCheckpointLoads) {
  temp_dir dir("digest_whole");
  const auto ckpt = saved(dir);
  const auto record = nlohmann::json::parse(slurp(ckpt + "/checkpoint.json"));
  EXPECT_EQ(record.at("format"), "pe-actor-run checkpoint 2");
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(ckpt)) {
    const auto name = entry.path().filename().string();
    if (name == checkpoint_file_name) continue;
    ++files;
    ASSERT_TRUE(record.at("files").contains(name)) << name;
    EXPECT_EQ(record["files"][name].at("bytes"), fs::file_size(entry.path()));
    EXPECT_EQ(record["files"][name].at("sha256"), sha256_file_hex(entry.path().string()));
  }
  EXPECT_EQ(record.at("files").size(), files);
  EXPECT_GT(files, 5u) << "Adam's moments are saved too";
  const auto r = run(setup + " --steps 4 --load-params " + ckpt, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "every file's SHA-256 checked")) << r.out;
}

TEST(CheckpointDigests, AnAlteredByteIsRefusedNamingTheFile) {
  temp_dir dir("digest_altered");
  const auto ckpt = saved(dir);
  const auto file = ckpt + "/fc_0.w_0";
  std::string bytes = slurp(file);
  bytes[bytes.size() - 3] ^= 0x01; // one bit of one weight, the size unchanged
  testing::write_file(file, bytes);
  refused(ckpt, file + " was altered after the save: its SHA-256 is ", dir);
}

TEST(CheckpointDigests, ATruncatedOrMissingFileIsRefused) {
  temp_dir dir("digest_truncated");
  const auto ckpt = saved(dir);
  fs::resize_file(ckpt + "/fc_0.b_0", fs::file_size(ckpt + "/fc_0.b_0") - 4);
  refused(ckpt, ckpt + "/fc_0.b_0 has ", dir);
  refused(ckpt, "(truncated or replaced)", dir);
  const auto again = saved(dir); // a fresh save replaces the damaged one whole
  fs::remove(again + "/fc_1.w_0_moment2_0");
  refused(again, again + "/fc_1.w_0_moment2_0 is missing", dir);
}

TEST(CheckpointDigests, AFileTheRecordDoesNotListIsRefused) {
  temp_dir dir("digest_unlisted");
  const auto ckpt = saved(dir);
  auto record = nlohmann::json::parse(slurp(ckpt + "/checkpoint.json"));
  record["files"].erase("fc_0.w_0");
  testing::write_file(ckpt + "/checkpoint.json", record.dump(2));
  refused(ckpt, "fc_0.w_0 is not among the files checkpoint.json records", dir);
}

TEST(CheckpointDigests, AMalformedDigestIsAnUnreadableRecord) {
  temp_dir dir("digest_malformed");
  const auto ckpt = saved(dir);
  auto record = nlohmann::json::parse(slurp(ckpt + "/checkpoint.json"));
  record["files"]["fc_0.w_0"]["sha256"] = "not hex";
  testing::write_file(ckpt + "/checkpoint.json", record.dump(2));
  testing::expect_error([&] { read_checkpoint(ckpt); }, {"not a checkpoint record", "64 hex digits"});
}

TEST(CheckpointDigests, AFormatOneCheckpointLoadsUnverifiedAndSaysSo) {
  temp_dir dir("digest_format1");
  const auto ckpt = saved(dir);
  auto record = nlohmann::json::parse(slurp(ckpt + "/checkpoint.json"));
  record.erase("files");
  record["format"] = "pe-actor-run checkpoint 1";
  testing::write_file(ckpt + "/checkpoint.json", record.dump(2));
  const auto r = run(setup + " --steps 4 --load-params " + ckpt, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "written before checkpoints carried digests, so not checked")) << r.out;
}

TEST(CheckpointDigests, ASaveOnAFullDiskLeavesThePreviousCheckpointIntact) {
  if (::geteuid() != 0 || std::system("command -v unshare >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "needs root and unshare(1) for a tmpfs of its own (CI's fresh root has both)";
  temp_dir dir("digest_full_disk");
  // The checkpoint's size decides the tmpfs: room for one and a half, so the first save
  // fits and the second, written beside the first before the swap, runs out of space.
  // (tmpfs gives every file whole 4 KiB pages.)
  const auto sized = saved(dir);
  std::uintmax_t bytes = 0;
  for (const auto& entry : fs::directory_iterator(sized))
    bytes += (fs::file_size(entry.path()) + 4095) / 4096 * 4096;
  const auto kib = (bytes * 3 / 2) / 1024 + 8;
  const auto disk = dir.file("disk"), ckpt = disk + "/ckpt";
  fs::create_directories(disk);
  const std::string binary = pe::testing::pe_actor_run_binary();
  // Mounts stay in this namespace: / made private, or where / is no mount point (a chroot,
  // as CI's fresh root) the disk directory bound onto itself and made private.
  const std::string script =
      "set -u; { mount --make-rprivate / 2>/dev/null || { mount --bind " + disk + " " + disk +
      " && mount --make-private " + disk + "; }; } || exit 89; " +
      "mount -t tmpfs -o size=" + std::to_string(kib) + "k pe-ckpt-test " + disk + " || exit 90; " +
      binary + " " + setup + " --steps 2 --save-params " + ckpt + " > " + dir.file("first.out") + " 2>&1 || exit 91; " +
      "cp " + ckpt + "/checkpoint.json " + dir.file("record.before") + "; " +
      binary + " " + setup + " --steps 4 --load-params " + ckpt + " --save-params " + ckpt + " > " +
      dir.file("second.out") + " 2>&1; echo $? > " + dir.file("second.status") + "; " +
      "cp " + ckpt + "/checkpoint.json " + dir.file("record.after") + "; ls -a " + disk + " > " + dir.file("disk.ls") + "; " +
      binary + " " + setup + " --steps 4 --load-params " + ckpt + " > " + dir.file("third.out") + " 2>&1 || exit 93";
  const int status = std::system(("unshare --mount --propagation unchanged sh -c '" + script + "'").c_str());
  ASSERT_EQ(WEXITSTATUS(status), 0) << slurp(dir.file("first.out")) << slurp(dir.file("third.out"));
  EXPECT_NE(slurp(dir.file("second.status")), "0\n") << slurp(dir.file("second.out"));
  const auto second = slurp(dir.file("second.out"));
  EXPECT_TRUE(contains(second, "--save-params " + ckpt + ": the checkpoint could not be written")) << second;
  EXPECT_TRUE(contains(second, "No space left on device")) << second;
  EXPECT_TRUE(contains(second, "the previous checkpoint there is intact")) << second;
  EXPECT_EQ(slurp(dir.file("record.before")), slurp(dir.file("record.after")));
  EXPECT_FALSE(contains(slurp(dir.file("disk.ls")), ".partial")) << "the staging directory is removed";
  // The previous checkpoint, step 2, loads whole, its digests checked.
  const auto third = slurp(dir.file("third.out"));
  EXPECT_TRUE(contains(third, "(checkpoint at step 2, epoch 1 batch 3 next; every file's SHA-256 checked)")) << third;
}

} // namespace
} // namespace pe
