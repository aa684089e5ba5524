// Training programs written by paddlepaddle 2.6.2 (tests/data/paddle_<name>/, from
// scripts/make_paddle_fixture.py): with Paddle's initial parameters loaded from Paddle's own
// files and one fixed batch, 20 steps give Paddle's losses within 1e-4 relative, on 1 place
// and on 2 places (against Paddle's own 2-place ParallelExecutor run: batch_norm normalises
// each place's rows there as here).
//   mlp_cross_entropy2:  fc-relu-fc-softmax, cross_entropy2 (XShape/MatchX), accuracy, sgd
//   mlp_dropout_l2decay: two dropouts (is_test: Paddle's masks are random draws we cannot
//                        reproduce, so the deterministic inference path runs; dropout_grad
//                        too), L2Decay lowered by Paddle to scale + sum on each gradient, sgd
//   lenet_batch_norm:    2 x conv-batch_norm-relu-max_pool, 3 fc, momentum with L2Decay
//                        folded into the momentum op (regularization_method "l2_decay")
//   resnet_small:        paddle.nn layers: conv3x3 stem, 3 BasicBlocks (the last two with
//                        stride-2 1x1 shortcut convs), batch_norm, AdaptiveAvgPool2D(1),
//                        Linear, momentum with L2Decay
//   bow_classifier:      fed input_ids INT64 [-1, 8] and label, not an image: nn.Embedding
//                        (lookup_table_v2, dense), mean over the words, Linear, cross
//                        entropy, sgd (tests/cli_feeds_test.cpp runs it through the CLI)
//   lr_schedule:         an MLP whose learning rate is computed in the program
//                        (linear_lr_warmup(polynomial_decay)): counter, conditional_blocks,
//                        select_input (tests/paddle_lr_schedule_test.cpp checks the rates)
//   encoder_classifier:  a BERT-style classifier from paddle.nn (scripts/
//                        make_paddle_encoder_fixture.py): word and position embeddings (the
//                        position ids computed in the program: fill_any_like, INT64 cumsum
//                        and elementwise_sub), 2 TransformerEncoderLayers (4-D matmul_v2 with
//                        trans_y, reshape2 with 0 dims, transpose2, softmax, gelu, 3-D
//                        layer_norm), the first token (slice with decrease_axis), AdamW with
//                        weight decay and ClipGradByGlobalNorm (in-place gradient scaling)
// and pe-actor-run on the ResNet's files (--data npy:DIR --load-params): with --no-shuffle
// its 2-place losses are Paddle's 2-place ones (shuffled, the places' rows differ, and so do
// their batch_norm statistics).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/job.hpp"
#include "support/paddle_fixtures.hpp"
#include "support/process.hpp"
#include "data/npy.hpp"

namespace {

using namespace pe;

std::string fixture_dir(const std::string& name) { return pe::testing::paddle_training_fixture(name); }

class paddle_training : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(paddle_training, twenty_steps_equal_paddles_losses) {
  const auto& [name, places] = GetParam();
  const std::vector<float> paddle = pe::testing::paddles_losses(fixture_dir(name), places);
  ASSERT_EQ(paddle.size(), 20u);
  std::vector<place> where;
  for (int p = 0; p < places; ++p) where.push_back(place::cpu(p));
  const std::vector<float> ours = pe::testing::paddle_fixture_losses(fixture_dir(name), where, 20);
  for (std::size_t s = 0; s < ours.size(); ++s)
    EXPECT_NEAR(ours[s], paddle[s], 1e-4 * std::abs(paddle[s]))
        << name << " on " << places << " place(s), step " << s + 1;
}

INSTANTIATE_TEST_SUITE_P(fixtures, paddle_training,
                         pe::testing::paddle_training_cases(), pe::testing::paddle_training_case_name);

/// pe-actor-run's 20 losses on the fixture's files, from its --metrics file.
std::vector<double> cli_losses(const std::string& name, const std::string& flags) {
  const std::string dir = fixture_dir(name);
  pe::testing::temp_dir out("paddle_cli_" + name);
  const auto r = pe::testing::run_binary(
      pe::testing::pe_actor_run_binary(),
      "--model " + dir + "/main.pb --startup " + dir + "/startup.pb --load-params " + dir +
          "/params --data npy:" + dir + " --batch-size 32 --steps 20 --metrics " +
          out.file("m.json") + " " + flags,
      out.path());
  EXPECT_EQ(r.status, 0) << r.err;
  return pe::testing::losses(out.file("m.json"));
}

TEST(paddle_training_cli, unshuffled_two_places_split_the_batch_as_paddles_parallel_executor) {
  const tensor expected_2p = read_npy(fixture_dir("resnet_small") + "/losses_2p.npy");
  const tensor expected_1p = read_npy(fixture_dir("resnet_small") + "/losses_1p.npy");
  const auto paddle_2p = expected_2p.values<float>(), paddle_1p = expected_1p.values<float>();
  const auto ours = cli_losses("resnet_small", "--places cpu:2 --no-shuffle");
  ASSERT_EQ(ours.size(), 20u);
  for (std::size_t s = 0; s < ours.size(); ++s)
    EXPECT_NEAR(ours[s], paddle_2p[s], 1e-4 * std::abs(paddle_2p[s])) << "step " << s + 1;
  // Shuffled, one place sees the same rows (the whole batch) and still matches...
  const auto one = cli_losses("resnet_small", "--places cpu:1");
  ASSERT_EQ(one.size(), 20u);
  EXPECT_NEAR(one[0], paddle_1p[0], 1e-4 * std::abs(paddle_1p[0]));
  // ...while two places normalise other rows than Paddle's places did.
  const auto shuffled = cli_losses("resnet_small", "--places cpu:2");
  ASSERT_EQ(shuffled.size(), 20u);
  EXPECT_GT(std::abs(shuffled[0] - paddle_2p[0]), 1e-4 * std::abs(paddle_2p[0]));
}

} // namespace
