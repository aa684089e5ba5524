// --check-nan-inf (Paddle's FLAGS_check_nan_inf): after each op's kernel its FP32 outputs are
// checked, and the step fails naming the first op, place and variable holding NaN or an
// infinity, in the actor executor (1 and 2 places) and the reference executor alike.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/exec/scope.hpp"
#include "graph/models/mlp.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/tiny_mlp.hpp"
#include "core/place_list.hpp"

namespace pe {
namespace {

using testing::expect_error;

using testing::tiny_mlp;

/// A batch of 4 rows whose last row holds an infinity: on 2 places that row is place 1's.
feed_map poisoned_batch(const model_programs& m) {
  auto batch = testing::argmax_batch(4, 6, 3, 7);
  batch.image.values<float>()[3 * 6 + 2] = std::numeric_limits<float>::infinity();
  return {{m.image, batch.image}, {m.label, batch.label}};
}

/// The first fc's mul (op #0 reads the image) and its output.
const std::vector<std::string> first_fc_failure = {"op #0 (mul)", "output variable 'fc_0.tmp_0'",
                                                   "holds", "(--check-nan-inf)"};

TEST(check_nan_inf, actor_executor_names_op_place_and_variable) {
  for (int places : {1, 2}) {
    auto m = tiny_mlp();
    execution_strategy exec;
    exec.check_nan_inf = true;
    parallel_executor exe(make_cpu_places(places), m.startup, m.main, {}, exec);
    auto parts = first_fc_failure;
    parts.push_back("on cpu:" + std::to_string(places - 1)); // the poisoned row's place
    expect_error([&] { exe.run(poisoned_batch(m), {m.loss}); }, parts);
    // The test executor sharing its variables checks too.
    parallel_executor test(m.test, exe);
    expect_error([&] { test.run(poisoned_batch(m), {m.loss}); }, first_fc_failure);
  }
}

TEST(check_nan_inf, reference_executor_names_op_place_and_variable) {
  auto m = tiny_mlp();
  scope vars;
  reference_executor(m.startup, vars).run({}, {});
  reference_executor exe(m.main, vars, place::cpu(), default_max_tensor_bytes(), true);
  auto parts = first_fc_failure;
  parts.push_back("on cpu:0");
  expect_error([&] { exe.run(poisoned_batch(m), {m.loss}); }, parts);
}

TEST(check_nan_inf, off_nothing_is_checked) {
  auto m = tiny_mlp();
  parallel_executor exe(make_cpu_places(2), m.startup, m.main);
  auto loss = exe.run(poisoned_batch(m), {m.loss});
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_FALSE(std::isfinite(loss[0].values<float>()[0]));

  scope vars;
  reference_executor(m.startup, vars).run({}, {});
  reference_executor ref(m.main, vars);
  EXPECT_NO_THROW(ref.run(poisoned_batch(m), {m.loss}));
}

TEST(check_nan_inf, finite_steps_pass) {
  auto m = tiny_mlp();
  execution_strategy exec;
  exec.check_nan_inf = true;
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, exec);
  auto batch = testing::argmax_batch(4, 6, 3, 7);
  EXPECT_NO_THROW(exe.run({{m.image, batch.image}, {m.label, batch.label}}, {m.loss}));
}

} // namespace
} // namespace pe
