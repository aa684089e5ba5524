// Loading and saving ProgramDescs: binary and text round trips, and garbage input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include <google/protobuf/util/message_differencer.h>

#include "core/error.hpp"
#include "graph/models/mlp.hpp"
#include "graph/program_io.hpp"
#include "tests/support/expect_error.hpp"

namespace {

using pe::program_format;
using pe::testing::expect_error;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("pe_program_io_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

pe::model_programs small_mlp() {
  pe::mlp_config c;
  c.input_width = 12;
  c.hidden = {8, 6};
  c.classes = 4;
  c.optimizer = "adam";
  return pe::build_mlp(c);
}

bool same(const pe::proto::ProgramDesc& a, const pe::proto::ProgramDesc& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

TEST(program_io, binary_round_trip_is_byte_identical) {
  auto m = small_mlp();
  std::string path = temp_path("main.pb");
  pe::save_program(m.main, path);
  std::string first = read_file(path);
  auto loaded = pe::load_program(path);
  EXPECT_TRUE(same(loaded, m.main));
  std::string again = temp_path("main2.pb");
  pe::save_program(loaded, again);
  EXPECT_EQ(read_file(again), first);
  std::remove(path.c_str());
  std::remove(again.c_str());
}

TEST(program_io, text_round_trip_is_byte_identical) {
  auto m = small_mlp();
  std::string path = temp_path("main.pbtxt");
  pe::save_program(m.main, path, program_format::text);
  std::string first = read_file(path);
  EXPECT_NE(first.find("type: \"softmax_with_cross_entropy\""), std::string::npos);
  auto loaded = pe::load_program(path);
  EXPECT_TRUE(same(loaded, m.main));
  std::string again = temp_path("main2.pbtxt");
  pe::save_program(loaded, again, program_format::text);
  EXPECT_EQ(read_file(again), first);
  std::remove(path.c_str());
  std::remove(again.c_str());
}

TEST(program_io, unknown_fields_survive_a_round_trip) {
  // A newer Paddle may write fields we do not know (here field 99 of ProgramDesc).
  auto m = small_mlp();
  std::string bytes = pe::serialize_program(m.startup, program_format::binary);
  bytes += std::string("\x9a\x06\x03" "abc", 6); // field 99, wire type 2, 3 bytes
  auto loaded = pe::parse_program(bytes, "test");
  EXPECT_EQ(pe::serialize_program(loaded, program_format::binary), bytes);
}

TEST(program_io, truncated_binary_is_an_error) {
  auto m = small_mlp();
  std::string bytes = pe::serialize_program(m.main, program_format::binary);
  for (std::size_t cut : {std::size_t{1}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE("truncated to " + std::to_string(cut) + " bytes");
    expect_error([&] { pe::parse_program(bytes.substr(0, cut), "cut"); }, {"cut"});
  }
}

TEST(program_io, missing_required_fields_are_named_and_protobuf_prints_nothing) {
  auto m = small_mlp();
  m.main.mutable_blocks(0)->mutable_ops(0)->clear_type(); // OpDesc.type is required
  const std::string bytes = m.main.SerializePartialAsString();
  ::testing::internal::CaptureStderr();
  expect_error([&] { pe::parse_program(bytes, "partial"); },
               {"partial: not a valid binary ProgramDesc (missing required fields: "
                "blocks[0].ops[0].type)"});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(program_io, garbage_bytes_are_an_error_never_a_crash) {
  std::mt19937 rng(7);
  int rejected = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(1 + rng() % 512, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    try {
      pe::parse_program(bytes, "garbage");
    } catch (const pe::error&) {
      ++rejected;
    }
  }
  // Random bytes essentially never form a ProgramDesc (required fields, wire types).
  EXPECT_GE(rejected, 195);
}

TEST(program_io, malformed_text_names_the_line) {
  expect_error(
      [] { pe::parse_program("blocks {\n  idx: 0\n  parent_idx: -1\n  ops { type: 7 oops }\n}\n", "t.pbtxt"); },
      {"t.pbtxt", "line 4"});
}

TEST(program_io, missing_file_is_an_error) {
  EXPECT_THROW(pe::load_program("/nonexistent/dir/main.pb"), pe::error);
  std::string empty = temp_path("empty.pb");
  { std::ofstream out(empty); }
  EXPECT_THROW(pe::load_program(empty), pe::error);
  std::remove(empty.c_str());
}

} // namespace
