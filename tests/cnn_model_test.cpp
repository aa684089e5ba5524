// The built-in CNN (graph/models/cnn.hpp): Paddle's structure, a test program that runs
// batch_norm on its moving statistics, and training that fits a batch on 1 and 2 places,
// with the actor executor equal to the reference executor on one place.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "actors/parallel_executor.hpp"
#include "graph/attributes.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/models/cnn.hpp"
#include "graph/validate.hpp"
#include "tests/support/batches.hpp"

namespace {

using namespace pe;

std::map<std::string, int> op_counts(const proto::ProgramDesc& program) {
  std::map<std::string, int> counts;
  for (const auto& op : program.blocks(0).ops()) ++counts[op.type()];
  return counts;
}

/// A learnable batch of `rows` 28x28 images (argmax_batch's rows, reshaped).
feed_map image_batch(const model_programs& m, std::int64_t rows, std::uint64_t seed) {
  auto batch = pe::testing::argmax_batch(rows, 28 * 28, 10, seed);
  tensor image(dtype::fp32, {rows, 1, 28, 28});
  std::memcpy(image.raw(), batch.image.raw(), image.bytes());
  return {{m.image, image}, {m.label, batch.label}};
}

TEST(cnn_model, has_paddles_layers_and_validates) {
  const model_programs m = build_cnn({});
  EXPECT_NO_THROW(validate_program(m.startup));
  EXPECT_NO_THROW(validate_program(m.main));
  EXPECT_NO_THROW(validate_program(m.test));
  auto main = op_counts(m.main);
  EXPECT_EQ(main["conv2d"], 2);
  EXPECT_EQ(main["conv2d_grad"], 2);
  EXPECT_EQ(main["batch_norm"], 2);
  EXPECT_EQ(main["batch_norm_grad"], 2);
  EXPECT_EQ(main["pool2d"], 2);
  EXPECT_EQ(main["pool2d_grad"], 2);
  EXPECT_EQ(main["mul"], 3);
  EXPECT_EQ(main["momentum"], 2 * 2 + 3 * 2 + 2); // bn scale/bias, fc w/b, conv filters

  auto test = op_counts(m.test);
  EXPECT_EQ(test["batch_norm"], 2);
  EXPECT_EQ(test.count("batch_norm_grad"), 0u);
  EXPECT_EQ(test.count("momentum"), 0u);
  for (const auto& op : m.test.blocks(0).ops())
    if (op.type() == "batch_norm") {
      EXPECT_TRUE(find_attr(op, "is_test")->b()) << "test program";
    }
  for (const auto& op : m.main.blocks(0).ops())
    if (op.type() == "batch_norm") {
      EXPECT_FALSE(find_attr(op, "is_test")->b()) << "main program";
    }
}

TEST(cnn_model, rejects_bad_configurations) {
  cnn_config c;
  c.channels = {16, 0};
  EXPECT_THROW(build_cnn(c), error);
  c = {};
  c.optimizer = "rmsprop";
  EXPECT_THROW(build_cnn(c), error);
}

TEST(cnn_model, actor_executor_equals_the_reference_on_one_place) {
  const model_programs m = build_cnn({});
  const feed_map feeds = image_batch(m, 16, 3);
  scope vars;
  reference_executor(m.startup, vars).run({}, {});
  reference_executor reference(m.main, vars);
  parallel_executor actors({place::cpu(0)}, m.startup, m.main);
  for (int step = 0; step < 5; ++step) {
    const float expected = reference.run(feeds, {m.loss}).at(0).values<float>()[0];
    const float got = actors.run(feeds, {m.loss}).at(0).values<float>()[0];
    EXPECT_NEAR(got, expected, 1e-5f * std::max(1.f, expected)) << "step " << step;
  }
}

TEST(cnn_model, fits_a_batch_on_one_and_two_places) {
  const model_programs m = build_cnn({});
  const feed_map feeds = image_batch(m, 32, 5);
  for (int places : {1, 2}) {
    std::vector<place> where;
    for (int p = 0; p < places; ++p) where.push_back(place::cpu(p));
    parallel_executor exe(where, m.startup, m.main);
    auto mean_loss = [&] {
      const tensor t = exe.run(feeds, {m.loss}).at(0);
      float sum = 0;
      for (float v : t.values<float>()) sum += v;
      return sum / static_cast<float>(t.numel());
    };
    const float first = mean_loss();
    float last = first;
    for (int step = 0; step < 30; ++step) last = mean_loss();
    EXPECT_LT(last, 0.01f * first) << places << " place(s): " << first << " -> " << last;
  }
}

} // namespace
