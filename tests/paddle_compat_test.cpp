// Programs saved by PaddlePaddle itself (tests/data/paddle_mlp_*.pb, written by
// scripts/make_paddle_fixture.py with paddlepaddle 2.6.2) load, re-save byte for byte,
// validate and train.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "graph/exec/reference_executor.hpp"
#include "graph/program_info.hpp"
#include "graph/program_io.hpp"
#include "graph/validate.hpp"
#include "tests/support/grad_check.hpp"

namespace {

using namespace pe;

std::string fixture(const std::string& name) {
  return std::string(PE_TEST_DATA_DIR) + "/" + name;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(paddle_compat, saved_programs_re_save_byte_for_byte) {
  for (const char* name : {"paddle_mlp_main.pb", "paddle_mlp_startup.pb"}) {
    std::string bytes = bytes_of(fixture(name));
    ASSERT_FALSE(bytes.empty()) << name;
    auto program = load_program(fixture(name));
    EXPECT_EQ(serialize_program(program, program_format::binary), bytes) << name;
    auto text = serialize_program(program, program_format::text);
    EXPECT_EQ(serialize_program(parse_program(text, name), program_format::binary), bytes) << name;
  }
}

TEST(paddle_compat, saved_training_program_validates_and_trains) {
  auto startup = load_program(fixture("paddle_mlp_startup.pb"));
  auto main = load_program(fixture("paddle_mlp_main.pb"));
  EXPECT_NO_THROW(validate_program(startup));
  EXPECT_NO_THROW(validate_program(main));

  auto roles = analyze_program(main);
  EXPECT_EQ(roles.feeds, (std::vector<std::string>{"image", "label"}));
  EXPECT_EQ(roles.loss, "mean_0.tmp_0");

  scope vars;
  reference_executor(startup, vars).run({}, {});
  reference_executor trainer(main, vars);
  // Class c lights up pixels [c*78, c*78+78): learnable by the 784-64-10 MLP.
  auto make_batch = [](std::uint64_t seed) {
    tensor image = pe::testing::random_tensor({32, 784}, seed, 0.f, 0.2f);
    tensor label = pe::testing::random_labels({32, 1}, 10, seed + 1);
    auto x = image.values<float>();
    auto y = label.values<std::int64_t>();
    for (int i = 0; i < 32; ++i)
      for (int p = 0; p < 78; ++p) x[i * 784 + y[i] * 78 + p] += 1.f;
    return feed_map{{"image", image}, {"label", label}};
  };
  std::vector<float> losses;
  for (int step = 0; step < 60; ++step)
    losses.push_back(trainer.run(make_batch(step * 2), {roles.loss})[0].values<float>()[0]);
  EXPECT_LT(losses.back(), losses.front() * 0.5f)
      << "loss " << losses.front() << " -> " << losses.back();
}

} // namespace
