// dropout and dropout_grad: masks and outputs in both implementations and at inference, how
// seeds, steps and places choose the mask, the grad kernel, gradients against central
// differences, shape inference, the errors users see, and masks of data-parallel replicas.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "graph/attributes.hpp"
#include "graph/builder.hpp"
#include "graph/exec/bound_op.hpp"
#include "graph/exec/scope.hpp"
#include "graph/op_registry.hpp"
#include "tests/support/grad_check.hpp"
#include "tests/support/op_test.hpp"

namespace {

using namespace pe::testing;
using pe::tensor;

pe::proto::OpDesc dropout_op(const attr_list& attrs) {
  return make_op("dropout", {{"X", "x"}}, {{"Out", "out"}, {"Mask", "mask"}}, attrs);
}

std::vector<std::uint8_t> mask_of(const pe::scope& vars) {
  auto m = vars.get("mask").values<std::uint8_t>();
  return {m.begin(), m.end()};
}

/// Runs dropout once on `x` and checks Out against X, Mask and `kept_scale` (what a kept
/// element is multiplied by); returns the fraction of kept elements.
double check_training_output(const tensor& x, const attr_list& attrs, float kept_scale) {
  pe::scope vars;
  vars.var("x") = x.clone();
  run_op(dropout_op(attrs), vars);
  const tensor& out = vars.get("out");
  EXPECT_EQ(out.shape(), x.shape());
  EXPECT_EQ(vars.get("mask").type(), pe::dtype::uint8);
  EXPECT_EQ(vars.get("mask").shape(), x.shape());
  const auto in = x.values<float>();
  const auto o = out.values<float>();
  const std::vector<std::uint8_t> mask = mask_of(vars);
  std::int64_t kept = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_TRUE(mask[i] == 0 || mask[i] == 1) << i;
    EXPECT_FLOAT_EQ(o[i], mask[i] != 0 ? in[i] * kept_scale : 0.f) << i;
    kept += mask[i];
  }
  return static_cast<double>(kept) / static_cast<double>(in.size());
}

const tensor big_x = random_tensor({100, 100}, 11, 0.5f, 2.f);

TEST(Dropout, UpscaleInTrainKeepsAboutOneMinusProbAndDividesByIt) {
  const double kept = check_training_output(
      big_x,
      {{"dropout_prob", 0.3f}, {"seed", std::int32_t{5}},
       {"dropout_implementation", std::string("upscale_in_train")}},
      1.f / 0.7f);
  EXPECT_NEAR(kept, 0.7, 0.02);
}

TEST(Dropout, DowngradeInInferKeepsValuesUnscaledWhileTraining) {
  const double kept =
      check_training_output(big_x, {{"dropout_prob", 0.6f}, {"seed", std::int32_t{9}}}, 1.f);
  EXPECT_NEAR(kept, 0.4, 0.02);
}

TEST(Dropout, ProbabilityZeroKeepsAllAndOneDropsAllWithoutNaN) {
  const attr_list upscale = {{"dropout_implementation", std::string("upscale_in_train")},
                             {"seed", std::int32_t{1}}};
  attr_list none = upscale, all = upscale;
  none.emplace_back("dropout_prob", 0.f);
  all.emplace_back("dropout_prob", 1.f);
  EXPECT_EQ(check_training_output(big_x, none, 1.f), 1.0);
  EXPECT_EQ(check_training_output(big_x, all, 0.f), 0.0);
}

TEST(Dropout, InferenceScalesByOneMinusProbOnlyForDowngradeInInfer) {
  const tensor x = tensor::from_vector<float>({1, -2, 3, 4}, {2, 2});
  for (const auto& [mode, scale] : {std::pair<std::string, float>{"downgrade_in_infer", 0.75f},
                                    {"upscale_in_train", 1.f}}) {
    pe::scope vars;
    vars.var("x") = x.clone();
    run_op(dropout_op({{"dropout_prob", 0.25f}, {"is_test", true},
                       {"dropout_implementation", mode}}),
           vars);
    EXPECT_TRUE(pe::testing::tensor_is(vars.get("out"), {2, 2},
                                       {1 * scale, -2 * scale, 3 * scale, 4 * scale}))
        << mode;
    // Paddle leaves Mask unwritten here; ones keep a grad op or a fetch reading it working.
    EXPECT_EQ(mask_of(vars), (std::vector<std::uint8_t>{1, 1, 1, 1})) << mode;
  }
}

/// The masks of `steps` runs of one bound dropout op on `where`.
std::vector<std::vector<std::uint8_t>> masks_of_steps(const attr_list& attrs, pe::place where,
                                                      int steps, const tensor* seed = nullptr) {
  pe::scope vars;
  vars.var("x") = random_tensor({4, 16}, 3);
  auto op = dropout_op(attrs);
  if (seed != nullptr) {
    vars.var("seed") = seed->clone();
    pe::set_input(op, "Seed", {"seed"});
  }
  pe::bound_op bound(op, vars, where, 0);
  std::vector<std::vector<std::uint8_t>> masks;
  for (int s = 0; s < steps; ++s) {
    bound.run();
    masks.push_back(mask_of(vars));
  }
  return masks;
}

TEST(Dropout, ASeedGivesTheSameMasksEveryRunAndANewMaskEveryStep) {
  const attr_list seeded = {{"dropout_prob", 0.5f}, {"seed", std::int32_t{42}}};
  const auto first = masks_of_steps(seeded, pe::place::cpu(), 3);
  EXPECT_EQ(masks_of_steps(seeded, pe::place::cpu(), 3), first);
  EXPECT_NE(first[0], first[1]);
  EXPECT_NE(first[1], first[2]);

  const attr_list other_seed = {{"dropout_prob", 0.5f}, {"seed", std::int32_t{43}}};
  EXPECT_NE(masks_of_steps(other_seed, pe::place::cpu(), 1)[0], first[0]);
}

TEST(Dropout, FixSeedAndSeedInputRepeatTheMaskEveryStep) {
  const attr_list fixed = {{"dropout_prob", 0.5f}, {"fix_seed", true}, {"seed", std::int32_t{42}}};
  const auto masks = masks_of_steps(fixed, pe::place::cpu(), 2);
  EXPECT_EQ(masks[0], masks[1]);

  // The Seed input overrides the attribute and fixes the stream as fix_seed does.
  const tensor seed = tensor::from_vector<std::int32_t>({42}, {1});
  const auto from_input = masks_of_steps({{"dropout_prob", 0.5f}, {"seed", std::int32_t{7}}},
                                         pe::place::cpu(), 2, &seed);
  EXPECT_EQ(from_input[0], masks[0]);
  EXPECT_EQ(from_input[1], masks[0]);
}

TEST(Dropout, PlacesDrawDifferentMasksFromOneSeed) {
  for (const bool fix_seed : {false, true}) {
    const attr_list attrs = {{"dropout_prob", 0.5f}, {"fix_seed", fix_seed},
                             {"seed", std::int32_t{42}}};
    EXPECT_NE(masks_of_steps(attrs, pe::place::cpu(0), 1)[0],
              masks_of_steps(attrs, pe::place::cpu(1), 1)[0])
        << fix_seed;
  }
}

TEST(Dropout, SeedZeroWithoutFixSeedIsUnseeded) {
  // Two 64-element masks from std::random_device agree with probability 2^-64.
  const attr_list unseeded = {{"dropout_prob", 0.5f}};
  EXPECT_NE(masks_of_steps(unseeded, pe::place::cpu(), 1)[0],
            masks_of_steps(unseeded, pe::place::cpu(), 1)[0]);
}

pe::proto::OpDesc dropout_grad_op(const attr_list& attrs) {
  const auto grads = pe::op_registry::global().find("dropout")->make_grad(dropout_op(attrs));
  EXPECT_EQ(grads.size(), 1u);
  return grads.at(0);
}

TEST(DropoutGrad, ReadsMaskAndOutGradAsPaddle) {
  const auto grad = dropout_grad_op({{"dropout_prob", 0.3f}});
  EXPECT_EQ(grad.type(), "dropout_grad");
  EXPECT_EQ(pe::input_args(grad, "Mask"), std::vector<std::string>{"mask"});
  EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_TRUE(pe::input_args(grad, "X").empty());
  EXPECT_EQ(pe::output_args(grad, "X@GRAD"), std::vector<std::string>{"x@GRAD"});
}

TEST(DropoutGrad, MasksAndScalesOutGrad) {
  struct grad_case {
    attr_list attrs;
    std::vector<float> expected;
  };
  // Out@GRAD = [1, 2, 3, 4], Mask = [1, 0, 0, 1], dropout_prob 0.2.
  const std::vector<grad_case> cases = {
      {{{"dropout_implementation", std::string("upscale_in_train")}}, {1.25f, 0, 0, 5}},
      {{{"dropout_implementation", std::string("downgrade_in_infer")}}, {1, 0, 0, 4}},
      {{{"dropout_implementation", std::string("upscale_in_train")}, {"is_test", true}},
       {1, 2, 3, 4}},
      {{{"dropout_implementation", std::string("downgrade_in_infer")}, {"is_test", true}},
       {0.8f, 1.6f, 2.4f, 3.2f}}};
  for (const auto& c : cases) {
    pe::scope vars;
    vars.var("out@GRAD") = tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
    vars.var("mask") = tensor::from_vector<std::uint8_t>({1, 0, 0, 1}, {2, 2});
    attr_list attrs = c.attrs;
    attrs.emplace_back("dropout_prob", 0.2f);
    run_op(dropout_grad_op(attrs), vars);
    EXPECT_TRUE(pe::testing::tensor_is(vars.get("x@GRAD"), {2, 2}, c.expected));
  }
}

TEST(DropoutGrad, GradientMatchesNumericWithAFixedMask) {
  // fix_seed: every forward run of the checker draws the same mask.
  for (const char* mode : {"upscale_in_train", "downgrade_in_infer"})
    EXPECT_TRUE(pe::testing::gradient_matches(
        {.op_type = "dropout",
         .inputs = {{"X", {random_tensor({3, 5}, 8)}}},
         .attrs = {{"dropout_prob", 0.4f},
                   {"fix_seed", true},
                   {"seed", std::int32_t{3}},
                   {"dropout_implementation", std::string(mode)}},
         .check_slots = {"X"},
         .loss_outputs = {"Out"},
         .extra_outputs = {"Mask"}}))
        << mode;
}

TEST(DropoutGrad, RejectsMaskOfAnotherShape) {
  pe::scope vars;
  vars.var("out@GRAD") = tensor::zeros(pe::dtype::fp32, {2, 2});
  vars.var("mask") = tensor::from_vector<std::uint8_t>({1, 0, 1}, {3});
  const std::string message = error_of(dropout_grad_op({}), vars);
  EXPECT_NE(message.find("Mask is UINT8 [3] but must be UINT8 [2, 2] like Out@GRAD"),
            std::string::npos)
      << message;
}

TEST(Dropout, InfersUint8MaskAndRejectsBadAttributes) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 8}}}};
  auto out = infer(dropout_op({}), vars);
  EXPECT_EQ(out.at("out").dims, (pe::shape_t{-1, 8}));
  EXPECT_EQ(out.at("out").type, pe::dtype::fp32);
  EXPECT_EQ(out.at("mask").dims, (pe::shape_t{-1, 8}));
  EXPECT_EQ(out.at("mask").type, pe::dtype::uint8);

  auto grad = infer(dropout_grad_op({}), {{"mask", {pe::dtype::uint8, {-1, 8}}},
                                          {"out@GRAD", {pe::dtype::fp32, {-1, 8}}}});
  EXPECT_EQ(grad.at("x@GRAD").dims, (pe::shape_t{-1, 8}));

  const auto message_of = [&](const pe::proto::OpDesc& op, const pe::var_table& v) {
    try {
      infer(op, v);
    } catch (const pe::error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message_of(dropout_op({{"dropout_prob", 1.5f}}), vars)
                .find("dropout_prob must be in [0, 1], got 1.5"),
            std::string::npos);
  EXPECT_NE(message_of(dropout_op({{"dropout_implementation", std::string("scale")}}), vars)
                .find("dropout_implementation must be downgrade_in_infer or upscale_in_train, "
                      "got 'scale'"),
            std::string::npos);
  auto seeded = dropout_op({});
  pe::set_input(seeded, "Seed", {"s"});
  pe::var_table with_seed = vars;
  with_seed["s"] = {pe::dtype::int64, {1}};
  EXPECT_NE(message_of(seeded, with_seed).find("Seed must be one INT32 element, got INT64 [1]"),
            std::string::npos);
}

TEST(Dropout, KernelRejectsBadProbability) {
  pe::scope vars;
  vars.var("x") = tensor::zeros(pe::dtype::fp32, {2});
  const std::string message = error_of(dropout_op({{"dropout_prob", -0.5f}}), vars);
  EXPECT_NE(message.find("dropout_prob must be in [0, 1], got -0.5"), std::string::npos)
      << message;
}

TEST(Dropout, DataParallelReplicasDrawDifferentMasksEachStep) {
  pe::proto::ProgramDesc main, startup;
  pe::program_builder b(main, startup, 1);
  const std::string x = b.data("x", {-1, 32}, pe::dtype::fp32);
  // As Paddle 2.6 writes it: no fix_seed; a seed so the run is reproducible.
  b.append_op("dropout", {{"X", {x}}}, {{"Out", {"d"}}, {"Mask", {"d_mask"}}},
              {{"dropout_prob", 0.5f},
               {"seed", std::int32_t{17}},
               {"dropout_implementation", std::string("upscale_in_train")}});
  const pe::feed_map feeds = {{"x", tensor::zeros(pe::dtype::fp32, {4, 32})}};
  const auto masks_of_run = [&] {
    pe::parallel_executor exe({pe::place::cpu(0), pe::place::cpu(1)}, startup, main);
    std::vector<std::vector<std::uint8_t>> masks; // [step * 2 + place]
    for (int step = 0; step < 2; ++step) {
      const auto fetched = exe.run_per_place(feeds, {"d_mask"});
      for (const tensor& m : fetched.at(0)) {
        EXPECT_EQ(m.type(), pe::dtype::uint8);
        EXPECT_EQ(m.shape(), (pe::shape_t{2, 32}));
        masks.emplace_back(m.values<std::uint8_t>().begin(), m.values<std::uint8_t>().end());
      }
    }
    return masks;
  };
  const auto masks = masks_of_run();
  EXPECT_NE(masks[0], masks[1]); // places, step 0
  EXPECT_NE(masks[0], masks[2]); // steps, place 0
  EXPECT_NE(masks[1], masks[3]); // steps, place 1
  EXPECT_EQ(masks_of_run(), masks);
}

} // namespace
