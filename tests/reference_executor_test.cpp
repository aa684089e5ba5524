// The reference executor: feeds, fetches, errors, and training convergence.
#include <gtest/gtest.h>

#include <random>

#include "graph/exec/reference_executor.hpp"
#include "graph/models/mlp.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/grad_check.hpp"

namespace {

using namespace pe;

using pe::testing::argmax_batch;

struct trained {
  std::vector<float> losses;
  float accuracy = 0;
};

trained train(const std::string& optimizer, float lr, int steps) {
  mlp_config c;
  c.input_width = 16;
  c.hidden = {32};
  c.classes = 4;
  c.optimizer = optimizer;
  c.learning_rate = lr;
  auto m = build_mlp(c);
  scope vars;
  reference_executor(m.startup, vars).run({}, {});
  reference_executor main(m.main, vars);
  trained t;
  for (int s = 0; s < steps; ++s) {
    auto b = argmax_batch(64, 16, 4, 100 + s);
    auto out = main.run({{m.image, b.image}, {m.label, b.label}}, {m.loss});
    t.losses.push_back(out[0].values<float>()[0]);
  }
  reference_executor test(m.test, vars);
  auto b = argmax_batch(512, 16, 4, 99999);
  t.accuracy = test.run({{m.image, b.image}, {m.label, b.label}}, {m.accuracy})[0].values<float>()[0];
  return t;
}

float mean_of(const std::vector<float>& v, std::size_t from, std::size_t to) {
  float s = 0;
  for (std::size_t i = from; i < to; ++i) s += v[i];
  return s / static_cast<float>(to - from);
}

TEST(reference_executor, training_converges_with_every_optimizer) {
  for (auto [optimizer, lr] : {std::pair{"sgd", 0.2f}, {"momentum", 0.05f}, {"adam", 0.01f}}) {
    auto t = train(optimizer, lr, 300);
    float first = mean_of(t.losses, 0, 10), last = mean_of(t.losses, 290, 300);
    EXPECT_LT(last, first * 0.5f) << optimizer << ": loss " << first << " -> " << last;
    EXPECT_GT(t.accuracy, 0.8f) << optimizer;
  }
}

TEST(reference_executor, same_seed_gives_bit_identical_runs) {
  auto a = train("adam", 0.01f, 20), b = train("adam", 0.01f, 20);
  EXPECT_EQ(a.losses, b.losses);
}

TEST(reference_executor, feed_errors_are_clear) {
  mlp_config c;
  c.input_width = 8;
  c.hidden = {4};
  auto m = build_mlp(c);
  scope vars;
  reference_executor(m.startup, vars).run({}, {});
  reference_executor main(m.main, vars);
  auto good = argmax_batch(4, 8, 4, 1);
  auto message = [&](const feed_map& feeds) -> std::string {
    try {
      main.run(feeds, {m.loss});
    } catch (const error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({{m.image, good.image}}).find("missing feed 'label'"), std::string::npos);
  EXPECT_NE(message({{m.image, pe::testing::random_tensor({4, 9}, 1)}, {m.label, good.label}})
                .find("feed 'image' has shape [4, 9] but the program declares [-1, 8]"),
            std::string::npos);
  EXPECT_NE(message({{m.image, good.image}, {m.label, pe::testing::random_tensor({4, 1}, 2)}})
                .find("feed 'label' has dtype FP32 but the program declares INT64"),
            std::string::npos);
  EXPECT_NE(message({{m.image, good.image}, {m.label, good.label}, {"bogus", good.label}})
                .find("feed 'bogus' is not an input"),
            std::string::npos);
  // A label outside [0, classes) fails inside the kernel, naming op and place.
  auto bad_label = good.label.clone();
  bad_label.values<std::int64_t>()[2] = 42;
  std::string m2 = message({{m.image, good.image}, {m.label, bad_label}});
  EXPECT_NE(m2.find("(softmax_with_cross_entropy) on cpu:0"), std::string::npos) << m2;
  // The executor stays usable after an error.
  EXPECT_EQ(message({{m.image, good.image}, {m.label, good.label}}), "");
}

TEST(reference_executor, parameters_must_be_initialised) {
  mlp_config c;
  c.input_width = 8;
  c.hidden = {};
  auto m = build_mlp(c);
  scope vars; // startup program not run
  reference_executor main(m.main, vars);
  auto b = argmax_batch(4, 8, 4, 1);
  try {
    main.run({{m.image, b.image}, {m.label, b.label}}, {m.loss});
    FAIL() << "ran without parameters";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("input variable 'fc_0.w_0' has no value"), std::string::npos)
        << e.what();
  }
}

} // namespace
