// Host tests of the CUDA kernels' device code (kernels/cuda/*.hpp), compiled by the
// host compiler: every element-wise functor and element map against the CPU kernel of its op
// on random inputs, and the block / thread index math of the reducing kernels (Y@GRAD, mean,
// softmax lanes, losses, top_k, accuracy) replayed block by block and thread by thread
// against the CPU result. Runs in CI, without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/batch_norm_plans.hpp"
#include "kernels/cuda/broadcast_maps.hpp"
#include "kernels/cuda/dropout_mask.hpp"
#include "kernels/cuda/element_maps.hpp"
#include "kernels/cuda/elementwise_functors.hpp"
#include "kernels/cuda/finite_maps.hpp"
#include "kernels/cuda/grid_math.hpp"
#include "kernels/cuda/loss_plans.hpp"
#include "kernels/cuda/optimizer_maps.hpp"
#include "kernels/cuda/permute_index.hpp"
#include "kernels/cuda/softmax_plans.hpp"
#include "kernels/cuda/window_maps.hpp"
#include "kernels/fill_value.hpp"
#include "kernels/kernel.hpp"
#include "kernels/math_shapes.hpp"
#include "kernels/window_shapes.hpp"
#include "tests/support/grad_check.hpp"
#include "tests/support/kernel_cases.hpp"

namespace pe::cuda {
namespace {

using slots = std::vector<std::pair<std::string, tensor*>>;
using attrs = std::vector<std::pair<std::string, attribute>>;

/// Runs the CPU kernel of `op` over the given tensors.
void run_cpu(const std::string& op, const slots& inputs, const slots& outputs, const attrs& as,
             place where = place::cpu()) {
  kernel_context::slot_map in, out;
  for (const auto& [slot, t] : inputs) in[slot].push_back(t);
  for (const auto& [slot, t] : outputs) out[slot].push_back(t);
  attribute_map a;
  for (const auto& [name, value] : as) a.set(name, value);
  kernel_context ctx(op, std::move(in), std::move(out), std::move(a), where);
  const kernel_fn* fn = kernel_registry::global().find(op, place::kind::cpu);
  ASSERT_NE(fn, nullptr) << op;
  (*fn)(ctx);
}

/// tests/support's random tensors, in the argument order these tests read best in.
tensor random(const shape_t& dims, float lo, float hi, unsigned seed) {
  return testing::random_tensor(dims, seed, lo, hi);
}
tensor labels(const shape_t& dims, std::int64_t classes, unsigned seed) {
  return testing::random_labels(dims, classes, seed);
}

tensor empty_like(const tensor& t) { return tensor(t.type(), t.shape()); }

/// Every element of `got` within `rel` relative (plus `abs_floor`) of `want`.
::testing::AssertionResult close(const tensor& got, const tensor& want, float rel = 1e-6f,
                                 float abs_floor = 0.f) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure()
           << "dims " << to_string(got.shape()) << " vs " << to_string(want.shape());
  auto a = got.values<float>();
  auto b = want.values<float>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::abs(a[i] - b[i]) > rel * std::max(std::abs(a[i]), std::abs(b[i])) + abs_floor)
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << b[i];
  }
  return ::testing::AssertionSuccess();
}

/// Runs an element map for i < n, as the grid-stride launcher does.
template <class Map>
void for_each(std::int64_t n, const Map& map) {
  for (std::int64_t i = 0; i < n; ++i) map(i);
}

/// Replays a reduction plan (partial(j, t, threads), finish(j, total)): one block per small
/// element j, with `threads` threads.
template <class Plan>
void replay_blocks(std::int64_t blocks, unsigned threads, const Plan& plan) {
  for (std::int64_t j = 0; j < blocks; ++j) {
    std::vector<double> partials(threads);
    for (unsigned t = 0; t < threads; ++t) partials[t] = plan.partial(j, t, threads);
    plan.finish(j, simulate_tree(partials, plus_op{}));
  }
}

constexpr unsigned thread_counts[] = {1, 4, reduce_threads};

TEST(CudaGrid, GridStrideVisitsEveryElementOnce) {
  // Up to past max_blocks * threads, where threads must take several elements each.
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{255}, std::int64_t{256},
                               std::int64_t{257}, std::int64_t{100000},
                               max_blocks * element_threads + 3}) {
    const std::int64_t blocks = grid_blocks(n);
    EXPECT_LE(blocks, max_blocks);
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(n), 0);
    for (std::int64_t b = 0; b < blocks; ++b)
      for (unsigned t = 0; t < element_threads; ++t)
        grid_stride(n, b, t, blocks, element_threads, [&](std::int64_t i) { ++seen[static_cast<std::size_t>(i)]; });
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](std::uint8_t v) { return v == 1; })) << n;
  }
}

// --- --check-nan-inf's finite check ---------------------------------------------------------

TEST(CudaFunctors, FirstNonfiniteMapFindsTheFirstWhateverTheBlockOrder) {
  const finite_check_fn& cpu = *kernel_registry::global().find_finite_check(place::kind::cpu);
  const kernel_context no_op("check", {}, {}, {}, place::cpu());
  const std::int64_t n = 3 * element_threads * 7 + 5; // several blocks, a partial last one
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // (position, value) of the planted non-finite elements; {} leaves the tensor finite.
  const std::vector<std::vector<std::pair<std::int64_t, float>>> plants = {
      {}, {{0, nan}}, {{n - 1, -inf}}, {{900, inf}, {17, nan}, {4000, -inf}}, {{300, -nan}, {301, inf}}};
  for (const auto& planted : plants) {
    tensor x = random({n}, -1e38f, 1e38f, 11);
    for (const auto& [at, v] : planted) x.data<float>()[at] = v;
    const auto want = cpu(no_op, x);
    ASSERT_EQ(want.has_value(), !planted.empty());
    // Blocks in reverse order: a later index must not win over an earlier one.
    const std::int64_t blocks = grid_blocks(n);
    unsigned long long first = no_nonfinite;
    const first_nonfinite_map map{x.data<float>(), &first};
    for (std::int64_t b = blocks - 1; b >= 0; --b)
      for (unsigned t = element_threads; t-- > 0;) grid_stride(n, b, t, blocks, element_threads, map);
    if (!want) {
      EXPECT_EQ(first, no_nonfinite);
      continue;
    }
    EXPECT_EQ(first, static_cast<unsigned long long>(want->index));
  }
  for (const float v : {0.f, -0.f, 1e-45f, -3.4028235e38f, 3.4028235e38f}) EXPECT_TRUE(is_finite_float(v)) << v;
  for (const float v : {nan, -nan, inf, -inf}) EXPECT_FALSE(is_finite_float(v)) << v;
}

// --- activations -------------------------------------------------------------------------

/// The absolute slack of gelu's comparisons. The CPU kernel is oneDNN's (eltwise_gelu_erf and
/// _tanh, vectorised), the functors the C library's erf, tanh and exp. Over [-4, 4], against
/// the exact values in double, oneDNN's derivative was off by up to 2.6e-7 absolute (erf
/// form; the C library formula 1.3e-7) and 7e-7 (tanh form), mostly where 1 + erf(x) or
/// 1 + tanh(u) cancels for negative x; relative errors near gelu's zeros are meaningless, so
/// none is asked beyond 1e-6. The GPU tests allow the same 1e-6 absolute.
constexpr float gelu_abs_floor = 1e-6f;

template <class F>
void expect_unary(const std::string& op, const attrs& as, F f, float abs_floor = 0.f) {
  tensor x = random({7, 13, 11}, -4.f, 4.f, 1);
  x.data<float>()[0] = 0.f;
  tensor cpu_out;
  run_cpu(op, {{"X", &x}}, {{"Out", &cpu_out}}, as);
  tensor out = empty_like(x);
  for_each(x.numel(), unary_map<F>{x.data<float>(), out.data<float>(), f});
  EXPECT_TRUE(close(out, cpu_out, 1e-6f, abs_floor)) << op;
}

/// `op`_grad from (`first` slot, Out@GRAD), first being X or Out.
template <class F>
void expect_unary_grad(const std::string& op, const attrs& as, const std::string& first, F f,
                       float abs_floor = 0.f) {
  tensor x = random({5, 17, 9}, -4.f, 4.f, 2);
  x.data<float>()[1] = 0.f;
  tensor out;
  run_cpu(op, {{"X", &x}}, {{"Out", &out}}, as);
  tensor dout = random(x.shape(), -1.f, 1.f, 3);
  tensor& in = first == "X" ? x : out;
  tensor cpu_dx;
  run_cpu(op + "_grad", {{first, &in}, {"Out@GRAD", &dout}}, {{"X@GRAD", &cpu_dx}}, as);
  tensor dx = empty_like(x);
  for_each(x.numel(), binary_map<F>{in.data<float>(), dout.data<float>(), dx.data<float>(), f});
  EXPECT_TRUE(close(dx, cpu_dx, 1e-6f, abs_floor)) << op << "_grad";
}

TEST(CudaFunctors, ActivationsMatchCpu) {
  expect_unary("relu", {}, relu_fn{});
  expect_unary("tanh", {}, tanh_fn{});
  expect_unary("sigmoid", {}, sigmoid_fn{});
  expect_unary("leaky_relu", {{"alpha", 0.1f}}, leaky_relu_fn{0.1f});
  expect_unary("gelu", {{"approximate", true}}, gelu_fn{true}, gelu_abs_floor);
  expect_unary("gelu", {{"approximate", false}}, gelu_fn{false}, gelu_abs_floor);
  expect_unary("scale", {{"scale", 1.5f}, {"bias", 0.25f}, {"bias_after_scale", true}},
               scale_fn{1.5f, 0.25f});
  // bias_after_scale = false: the kernel folds the bias into scale * bias.
  expect_unary("scale", {{"scale", 1.5f}, {"bias", 0.25f}, {"bias_after_scale", false}},
               scale_fn{1.5f, 1.5f * 0.25f});
}

TEST(CudaFunctors, ActivationGradsMatchCpu) {
  expect_unary_grad("relu", {}, "Out", relu_grad_fn{});
  expect_unary_grad("tanh", {}, "Out", tanh_grad_fn{});
  expect_unary_grad("sigmoid", {}, "Out", sigmoid_grad_fn{});
  expect_unary_grad("leaky_relu", {{"alpha", 0.2f}}, "X", leaky_relu_grad_fn{0.2f});
  expect_unary_grad("gelu", {{"approximate", true}}, "X", gelu_grad_fn{true}, gelu_abs_floor);
  expect_unary_grad("gelu", {{"approximate", false}}, "X", gelu_grad_fn{false}, gelu_abs_floor);
}

TEST(CudaFunctors, ScaleMismatchIsCaught) {
  // The comparison is not vacuous: a wrong bias is reported.
  tensor x = random({64}, -1.f, 1.f, 4);
  tensor cpu_out;
  run_cpu("scale", {{"X", &x}}, {{"Out", &cpu_out}},
          {{"scale", 2.f}, {"bias", 1.f}, {"bias_after_scale", false}});
  tensor out = empty_like(x);
  for_each(x.numel(), unary_map<scale_fn>{x.data<float>(), out.data<float>(), {2.f, 1.f}});
  EXPECT_FALSE(close(out, cpu_out));
}

// --- elementwise binary ops with broadcast -------------------------------------------------

struct broadcast_case {
  shape_t x, y;
  int axis;
};

const std::vector<broadcast_case> broadcast_cases = {
    {{2, 3, 4}, {2, 3, 4}, -1}, {{2, 3, 4}, {4}, -1},       {{2, 3, 4}, {3}, 1},
    {{2, 3, 4}, {3, 1}, 1},     {{2, 3, 4}, {2}, 0},        {{6, 5}, {1}, -1},
    {{4, 1, 3, 5}, {1, 3}, 1},  {{3, 2, 4, 2}, {2, 4}, 1},  {{37, 300}, {300}, -1},
    {{0, 3}, {3}, 1},
};

/// The geometry the CUDA kernel builds: X full, Y's span kept.
reduce_geometry elementwise_geometry(const broadcast_case& c) {
  struct sink {
    void fail(const std::string& m) const { throw error(m); }
  };
  const broadcast_span span = infer_broadcast(sink{}, c.x, c.y, c.axis);
  std::vector<bool> reduced(c.x.size(), true);
  for (std::size_t i = span.begin; i < span.end; ++i) reduced[i] = false;
  return reduce_geometry::make(c.x, reduced);
}

template <class F, class G>
void expect_elementwise(const std::string& op, F f, G grad, bool reads_out) {
  for (const broadcast_case& c : broadcast_cases) {
    SCOPED_TRACE(op + " X " + to_string(c.x) + " Y " + to_string(c.y) + " axis " +
                 std::to_string(c.axis));
    tensor x = random(c.x, -2.f, 2.f, 5);
    tensor y = random(c.y, 0.5f, 2.f, 6);
    const attrs as = {{"axis", std::int32_t{c.axis}}};
    tensor cpu_out;
    run_cpu(op, {{"X", &x}, {"Y", &y}}, {{"Out", &cpu_out}}, as);
    const reduce_geometry g = elementwise_geometry(c);
    tensor out = empty_like(x);
    for_each(g.full_numel(),
             broadcast_forward_map<F>{x.data<float>(), y.data<float>(), out.data<float>(), g, f});
    EXPECT_TRUE(close(out, cpu_out));

    tensor dout = random(c.x, -1.f, 1.f, 7);
    slots in = {{"X", &x}, {"Y", &y}, {"Out@GRAD", &dout}};
    if (reads_out) in.push_back({"Out", &cpu_out});
    tensor cpu_dx, cpu_dy;
    run_cpu(op + "_grad", in, {{"X@GRAD", &cpu_dx}, {"Y@GRAD", &cpu_dy}}, as);
    const grad_inputs gi{x.data<float>(), y.data<float>(),
                         reads_out ? cpu_out.data<float>() : nullptr, dout.data<float>(), g};
    tensor dx = empty_like(x);
    for_each(g.full_numel(), broadcast_dx_map<G>{gi, dx.data<float>(), grad});
    EXPECT_TRUE(close(dx, cpu_dx));
    for (unsigned threads : thread_counts) {
      tensor dy = empty_like(y);
      replay_blocks(g.small_numel(), threads, broadcast_dy_plan<G>{gi, dy.data<float>(), grad});
      EXPECT_TRUE(close(dy, cpu_dy, 1e-5f, 1e-6f)) << threads << " threads";
    }
  }
}

TEST(CudaFunctors, ElementwiseBroadcastMatchesCpu) {
  expect_elementwise("elementwise_add", add_fn{}, add_grad_fn{}, false);
  expect_elementwise("elementwise_sub", sub_fn{}, sub_grad_fn{}, false);
  expect_elementwise("elementwise_mul", mul_fn{}, mul_grad_fn{}, false);
  expect_elementwise("elementwise_div", div_fn{}, div_grad_fn{}, true);
  expect_elementwise("elementwise_max", max_fn{}, max_grad_fn{}, false);
  expect_elementwise("elementwise_min", min_fn{}, min_grad_fn{}, false);
  expect_elementwise("elementwise_pow", pow_fn{}, pow_grad_fn{}, false);
}

TEST(CudaFunctors, ReduceGeometryMapsBothWays) {
  // X [2, 3, 4, 5] with axes 1 and 3 reduced: small [2, 4].
  const reduce_geometry g = reduce_geometry::make({2, 3, 4, 5}, {false, true, false, true});
  EXPECT_EQ(g.small_numel(), 8);
  EXPECT_EQ(g.reduce_count(), 15);
  for (std::int64_t j = 0; j < g.small_numel(); ++j)
    for (std::int64_t r = 0; r < g.reduce_count(); ++r) {
      const std::int64_t i = g.full_index(j, r);
      ASSERT_EQ(g.small_index(i), j) << "j " << j << " r " << r;
      // i = ((a * 3 + b) * 4 + c) * 5 + d with small j = a * 4 + c.
      EXPECT_EQ(i / 60 * 4 + i / 5 % 4, j);
    }
  EXPECT_THROW(reduce_geometry::make(shape_t(10, 2), {true, false, true, false, true, false,
                                                      true, false, true, false}),
               error);
}

// --- sum, mean, reduce_mean ----------------------------------------------------------------

TEST(CudaFunctors, SumAccumulationMatchesCpu) {
  tensor a = random({3, 50}, -1.f, 1.f, 8), b = random({3, 50}, -1.f, 1.f, 9),
         c = random({3, 50}, -1.f, 1.f, 10);
  tensor cpu_out;
  kernel_context::slot_map in{{"X", {&a, &b, &c}}}, out{{"Out", {&cpu_out}}};
  kernel_context ctx("sum", in, out, {}, place::cpu());
  (*kernel_registry::global().find("sum", place::kind::cpu))(ctx);
  tensor mine = a.clone();
  for (const tensor* t : {&b, &c})
    for_each(mine.numel(), add_into_map{t->data<float>(), mine.data<float>()});
  EXPECT_TRUE(close(mine, cpu_out));
}

void expect_average(const std::string& op, const shape_t& dims, const std::vector<bool>& reduced,
                    const shape_t& out_dims, const attrs& as) {
  SCOPED_TRACE(op + " " + to_string(dims) + " " + to_string(out_dims));
  tensor x = random(dims, -1.f, 3.f, 11);
  tensor cpu_out;
  run_cpu(op, {{"X", &x}}, {{"Out", &cpu_out}}, as);
  const reduce_geometry g = reduce_geometry::make(dims, reduced);
  const float inv = g.small_numel() == 0 || g.full_numel() == 0
                        ? 0.f
                        : static_cast<float>(g.small_numel()) / static_cast<float>(g.full_numel());
  for (unsigned threads : thread_counts) {
    tensor out(dtype::fp32, out_dims);
    replay_blocks(g.small_numel(), threads, average_plan{x.data<float>(), out.data<float>(), g, inv});
    EXPECT_TRUE(close(out, cpu_out, 1e-5f, 1e-6f)) << threads;
  }
  tensor dout = random(out_dims, -1.f, 1.f, 12);
  tensor cpu_dx;
  run_cpu(op + "_grad", {{"X", &x}, {"Out@GRAD", &dout}}, {{"X@GRAD", &cpu_dx}}, as);
  tensor dx = empty_like(x);
  for_each(g.full_numel(), broadcast_scaled_map{dout.data<float>(), dx.data<float>(), g, inv});
  EXPECT_TRUE(close(dx, cpu_dx));
}

TEST(CudaFunctors, AveragesMatchCpu) {
  expect_average("mean", {4, 5, 6}, {true, true, true}, {1}, {});
  using ints = std::vector<std::int32_t>;
  const auto rm = [](ints dim, bool keep, bool all) {
    return attrs{{"dim", dim}, {"keep_dim", keep}, {"reduce_all", all}};
  };
  expect_average("reduce_mean", {4, 5, 6}, {false, true, false}, {4, 6}, rm({1}, false, false));
  expect_average("reduce_mean", {4, 5, 6}, {true, false, true}, {1, 5, 1}, rm({0, 2}, true, false));
  expect_average("reduce_mean", {4, 5, 6}, {false, false, true}, {4, 5}, rm({-1}, false, false));
  expect_average("reduce_mean", {4, 5, 6}, {true, true, true}, {1}, rm({}, false, true));
  expect_average("reduce_mean", {3, 1000}, {true, false}, {1000}, rm({0}, false, false));
}

// --- softmax -------------------------------------------------------------------------------

TEST(CudaFunctors, SoftmaxLanesMatchCpu) {
  for (const bool log : {false, true})
    for (const std::int32_t axis : {0, 1, 2, -1}) {
      const std::string op = log ? "log_softmax" : "softmax";
      SCOPED_TRACE(op + " axis " + std::to_string(axis));
      tensor x = random({3, 40, 5}, -5.f, 5.f, 13);
      const attrs as = {{"axis", axis}};
      tensor cpu_out;
      run_cpu(op, {{"X", &x}}, {{"Out", &cpu_out}}, as);
      const lane_layout l = lane_layout::around(x.shape(), axis < 0 ? 2 : axis);
      tensor dout = random(x.shape(), -1.f, 1.f, 14);
      tensor cpu_dx;
      run_cpu(op + "_grad", {{"Out", &cpu_out}, {"Out@GRAD", &dout}}, {{"X@GRAD", &cpu_dx}}, as);
      for (unsigned threads : thread_counts) {
        tensor out = empty_like(x);
        const softmax_plan p{x.data<float>(), out.data<float>(), l, log};
        tensor dx = empty_like(x);
        const softmax_grad_plan gp{cpu_out.data<float>(), dout.data<float>(), dx.data<float>(), l, log};
        for (std::int64_t lane = 0; lane < l.count(); ++lane) {
          std::vector<float> maxima(threads);
          for (unsigned t = 0; t < threads; ++t) maxima[t] = p.max_partial(lane, t, threads);
          const float max = simulate_tree(maxima, max_op{});
          std::vector<double> sums(threads);
          for (unsigned t = 0; t < threads; ++t) sums[t] = p.sum_partial(lane, t, threads, max);
          const double log_sum = std::log(simulate_tree(sums, plus_op{}));
          for (unsigned t = 0; t < threads; ++t) p.write(lane, t, threads, max, log_sum);
          for (unsigned t = 0; t < threads; ++t) sums[t] = gp.sum_partial(lane, t, threads);
          const double s = simulate_tree(sums, plus_op{});
          for (unsigned t = 0; t < threads; ++t) gp.write(lane, t, threads, s);
        }
        EXPECT_TRUE(close(out, cpu_out, 1e-5f, 1e-7f)) << threads;
        EXPECT_TRUE(close(dx, cpu_dx, 1e-5f, 1e-7f)) << threads;
      }
    }
}

// --- losses --------------------------------------------------------------------------------

TEST(CudaFunctors, SoftmaxWithCrossEntropyMatchesCpu) {
  for (const bool soft : {false, true}) {
    SCOPED_TRACE(soft ? "soft labels" : "hard labels");
    const std::int64_t rows = 6, classes = 37;
    tensor logits = random({rows, classes}, -6.f, 6.f, 15);
    tensor label = soft ? random({rows, classes}, 0.f, 1.f, 16) : labels({rows, 1}, classes, 16);
    if (!soft) label.data<std::int64_t>()[2] = -100; // ignored row
    const attrs as = {{"axis", std::int32_t{-1}},       {"soft_label", soft},
                      {"use_softmax", true},            {"ignore_index", std::int32_t{-100}},
                      {"numeric_stable_mode", true}};
    tensor cpu_softmax, cpu_loss;
    run_cpu("softmax_with_cross_entropy", {{"Logits", &logits}, {"Label", &label}},
            {{"Softmax", &cpu_softmax}, {"Loss", &cpu_loss}}, as);
    const lane_layout l{rows, classes, 1};
    for (unsigned threads : thread_counts) {
      tensor softmax = empty_like(logits), loss(dtype::fp32, {rows, 1});
      const softmax_xent_plan p{{logits.data<float>(), softmax.data<float>(), l, false},
                                soft ? label.data<float>() : nullptr,
                                soft ? nullptr : label.data<std::int64_t>(), loss.data<float>(), -100};
      for (std::int64_t r = 0; r < rows; ++r) {
        std::vector<float> maxima(threads);
        for (unsigned t = 0; t < threads; ++t) maxima[t] = p.softmax.max_partial(r, t, threads);
        const float max = simulate_tree(maxima, max_op{});
        std::vector<double> sums(threads);
        for (unsigned t = 0; t < threads; ++t) sums[t] = p.softmax.sum_partial(r, t, threads, max);
        const double log_sum = std::log(simulate_tree(sums, plus_op{}));
        for (unsigned t = 0; t < threads; ++t) p.softmax.write(r, t, threads, max, log_sum);
        if (soft) {
          for (unsigned t = 0; t < threads; ++t) sums[t] = p.loss_partial(r, t, threads, max, log_sum);
          p.finish_soft(r, simulate_tree(sums, plus_op{}));
        } else {
          p.finish_hard(r, max, log_sum);
        }
      }
      EXPECT_TRUE(close(softmax, cpu_softmax, 1e-5f, 1e-7f)) << threads;
      EXPECT_TRUE(close(loss, cpu_loss, 1e-5f, 1e-6f)) << threads;
    }
    tensor dloss = random({rows, 1}, 0.5f, 1.5f, 17);
    tensor cpu_grad;
    run_cpu("softmax_with_cross_entropy_grad",
            {{"Softmax", &cpu_softmax}, {"Label", &label}, {"Loss@GRAD", &dloss}},
            {{"Logits@GRAD", &cpu_grad}}, as);
    tensor grad = empty_like(logits);
    for_each(logits.numel(),
             softmax_xent_grad_map{cpu_softmax.data<float>(), soft ? label.data<float>() : nullptr,
                                   soft ? nullptr : label.data<std::int64_t>(), dloss.data<float>(),
                                   grad.data<float>(), classes, -100});
    EXPECT_TRUE(close(grad, cpu_grad));
  }
}

TEST(CudaFunctors, HardLabelOutOfRangeGivesNan) {
  // The CPU kernel throws; the GPU kernel marks the row's loss NaN.
  tensor logits = random({2, 3}, -1.f, 1.f, 18);
  std::vector<std::int64_t> y = {1, 7};
  tensor softmax = empty_like(logits), loss(dtype::fp32, {2, 1});
  const softmax_xent_plan p{{logits.data<float>(), softmax.data<float>(), {2, 3, 1}, false},
                            nullptr, y.data(), loss.data<float>(), -100};
  p.finish_hard(0, 1.f, 0.0);
  p.finish_hard(1, 1.f, 0.0);
  EXPECT_FALSE(std::isnan(loss.data<float>()[0]));
  EXPECT_TRUE(std::isnan(loss.data<float>()[1]));
}

TEST(CudaFunctors, CrossEntropyMatchesCpu) {
  const std::int64_t rows = 8, classes = 10;
  tensor p = random({rows, classes}, 0.01f, 1.f, 19);
  p.data<float>()[3] = 0.f; // log 0 clamps to 1e20
  for (const bool soft : {false, true}) {
    SCOPED_TRACE(soft ? "soft" : "hard");
    tensor label = soft ? random({rows, classes}, 0.f, 1.f, 20) : labels({rows, 1}, classes, 20);
    if (!soft) {
      label.data<std::int64_t>()[0] = 3;  // the zero probability
      label.data<std::int64_t>()[5] = -1; // ignored
    }
    const attrs as = {{"soft_label", soft}, {"ignore_index", std::int32_t{-1}}};
    tensor cpu_y;
    run_cpu("cross_entropy", {{"X", &p}, {"Label", &label}}, {{"Y", &cpu_y}}, as);
    tensor y(dtype::fp32, {rows, 1});
    for_each(rows, probability_xent_map{p.data<float>(), soft ? label.data<float>() : nullptr,
                                        soft ? nullptr : label.data<std::int64_t>(),
                                        y.data<float>(), nullptr, classes, -1});
    EXPECT_TRUE(close(y, cpu_y, 1e-6f));
    tensor dy = random({rows, 1}, 0.5f, 1.5f, 21);
    tensor cpu_dx;
    run_cpu("cross_entropy_grad", {{"X", &p}, {"Label", &label}, {"Y@GRAD", &dy}},
            {{"X@GRAD", &cpu_dx}}, as);
    tensor dx = tensor::zeros(dtype::fp32, p.shape());
    if (soft)
      for_each(p.numel(), soft_probability_grad_map{p.data<float>(), label.data<float>(),
                                                    dy.data<float>(), dx.data<float>(), classes});
    else
      for_each(rows, hard_probability_grad_map{p.data<float>(), nullptr,
                                               label.data<std::int64_t>(), dy.data<float>(),
                                               dx.data<float>(), classes, -1});
    EXPECT_TRUE(close(dx, cpu_dx));
  }
  // cross_entropy2 and its grad, through MatchX.
  tensor label = labels({rows, 1}, classes, 22);
  const attrs as = {{"ignore_index", std::int32_t{-100}}};
  tensor cpu_y, cpu_match, cpu_xshape;
  run_cpu("cross_entropy2", {{"X", &p}, {"Label", &label}},
          {{"Y", &cpu_y}, {"MatchX", &cpu_match}, {"XShape", &cpu_xshape}}, as);
  tensor y(dtype::fp32, {rows, 1}), match(dtype::fp32, {rows, 1});
  for_each(rows, probability_xent_map{p.data<float>(), nullptr, label.data<std::int64_t>(),
                                      y.data<float>(), match.data<float>(), classes, -100});
  EXPECT_TRUE(close(y, cpu_y));
  EXPECT_TRUE(close(match, cpu_match));
  tensor dy = random({rows, 1}, 0.5f, 1.5f, 23);
  tensor cpu_dx;
  run_cpu("cross_entropy_grad2",
          {{"XShape", &cpu_xshape}, {"Label", &label}, {"MatchX", &cpu_match}, {"Y@GRAD", &dy}},
          {{"X@GRAD", &cpu_dx}}, as);
  tensor dx = tensor::zeros(dtype::fp32, p.shape());
  for_each(rows, hard_probability_grad_map{nullptr, match.data<float>(), label.data<std::int64_t>(),
                                           dy.data<float>(), dx.data<float>(), classes, -100});
  EXPECT_TRUE(close(dx, cpu_dx));
}

TEST(CudaFunctors, TopKMatchesCpu) {
  struct top_case {
    std::string op;
    shape_t dims;
    std::size_t axis;
    std::int64_t k;
    bool largest;
  };
  for (const top_case& c : {top_case{"top_k", {4, 10}, 1, 3, true},
                            top_case{"top_k", {3, 2, 7}, 2, 7, true},
                            top_case{"top_k_v2", {6, 3, 2}, 0, 4, false},
                            top_case{"top_k_v2", {6, 5}, 1, 1, true}}) {
    SCOPED_TRACE(c.op + " " + to_string(c.dims));
    tensor x = random(c.dims, -1.f, 1.f, 24);
    // Ties: several equal values, which must come out lower index first.
    for (std::int64_t i = 0; i < x.numel(); i += 3) x.data<float>()[i] = 0.5f;
    attrs as = {{"k", static_cast<std::int32_t>(c.k)}};
    if (c.op == "top_k_v2") {
      as.push_back({"axis", static_cast<std::int32_t>(c.axis)});
      as.push_back({"largest", c.largest});
      as.push_back({"sorted", true});
    }
    tensor cpu_out, cpu_idx;
    run_cpu(c.op, {{"X", &x}}, {{"Out", &cpu_out}, {"Indices", &cpu_idx}}, as);
    const lane_layout l = lane_layout::around(x.shape(), c.axis);
    tensor out(dtype::fp32, cpu_out.shape()), idx(dtype::int64, cpu_idx.shape());
    for_each(l.count(), top_k_map{x.data<float>(), out.data<float>(), idx.data<std::int64_t>(), l,
                                  c.k, c.largest});
    EXPECT_TRUE(close(out, cpu_out, 0.f));
    EXPECT_TRUE(std::equal(idx.values<std::int64_t>().begin(), idx.values<std::int64_t>().end(),
                           cpu_idx.values<std::int64_t>().begin()));
    tensor dout = random(cpu_out.shape(), -1.f, 1.f, 25);
    tensor cpu_dx;
    run_cpu(c.op + "_grad", {{"X", &x}, {"Indices", &cpu_idx}, {"Out@GRAD", &dout}},
            {{"X@GRAD", &cpu_dx}}, as);
    tensor dx = empty_like(x);
    for_each(l.count(), top_k_grad_map{cpu_idx.data<std::int64_t>(), dout.data<float>(),
                                       dx.data<float>(), l, c.k});
    EXPECT_TRUE(close(dx, cpu_dx, 0.f));
  }
}

TEST(CudaFunctors, AccuracyMatchesCpu) {
  for (const std::int64_t rows : {0, 1, 37, 1000}) {
    const std::int64_t k = 3;
    tensor idx = labels({rows, k}, 10, 26), out = random({rows, k}, 0.f, 1.f, 27);
    tensor label = labels({rows, 1}, 10, 28);
    tensor cpu_acc, cpu_correct, cpu_total;
    run_cpu("accuracy", {{"Out", &out}, {"Indices", &idx}, {"Label", &label}},
            {{"Accuracy", &cpu_acc}, {"Correct", &cpu_correct}, {"Total", &cpu_total}}, {});
    for (unsigned threads : thread_counts) {
      tensor acc(dtype::fp32, {1}), correct(dtype::int32, {1}), total(dtype::int32, {1});
      const accuracy_plan p{idx.data<std::int64_t>(), label.data<std::int64_t>(), rows, k,
                            acc.data<float>(), correct.data<std::int32_t>(),
                            total.data<std::int32_t>()};
      std::vector<std::int64_t> partials(threads);
      for (unsigned t = 0; t < threads; ++t) partials[t] = p.partial(t, threads);
      p.finish(simulate_tree(partials, plus_op{}));
      EXPECT_EQ(correct.data<std::int32_t>()[0], cpu_correct.data<std::int32_t>()[0]) << rows;
      EXPECT_EQ(total.data<std::int32_t>()[0], cpu_total.data<std::int32_t>()[0]);
      EXPECT_TRUE(close(acc, cpu_acc));
    }
  }
}

// --- optimizers ----------------------------------------------------------------------------

tensor scalar(float v) { return tensor::from_vector(std::vector<float>{v}, {1}); }

TEST(CudaFunctors, SgdAndMomentumMatchCpu) {
  const shape_t dims = {17, 23};
  tensor p = random(dims, -1.f, 1.f, 29), g = random(dims, -1.f, 1.f, 30), lr = scalar(0.05f);
  tensor cpu_p;
  run_cpu("sgd", {{"Param", &p}, {"Grad", &g}, {"LearningRate", &lr}}, {{"ParamOut", &cpu_p}},
          {{"multi_precision", false}});
  tensor mine = empty_like(p);
  for_each(p.numel(), sgd_map{p.data<float>(), g.data<float>(), lr.data<float>(), mine.data<float>()});
  EXPECT_TRUE(close(mine, cpu_p));

  tensor v = random(dims, -0.1f, 0.1f, 31);
  for (const bool nesterov : {false, true})
    for (const std::string method : {"", "l2_decay"}) {
      SCOPED_TRACE(std::string(nesterov ? "nesterov " : "") + method);
      const attrs as = {{"multi_precision", false}, {"mu", 0.9f}, {"use_nesterov", nesterov},
                        {"rescale_grad", 0.5f},     {"regularization_method", method},
                        {"regularization_coeff", 0.01f}};
      tensor cpu_p2, cpu_v;
      run_cpu("momentum", {{"Param", &p}, {"Grad", &g}, {"Velocity", &v}, {"LearningRate", &lr}},
              {{"ParamOut", &cpu_p2}, {"VelocityOut", &cpu_v}}, as);
      tensor p2 = empty_like(p), v2 = empty_like(v);
      const momentum_fn f{0.9f, 0.5f, method.empty() ? 0.f : 0.01f, nesterov};
      for_each(p.numel(), momentum_map{p.data<float>(), g.data<float>(), v.data<float>(),
                                       lr.data<float>(), p2.data<float>(), v2.data<float>(), f});
      EXPECT_TRUE(close(p2, cpu_p2));
      EXPECT_TRUE(close(v2, cpu_v));
    }
}

struct adam_case {
  std::string op;
  bool beta_tensors, skip, global_pow, with_decay;
};

TEST(CudaFunctors, AdamAndAdamwMatchCpu) {
  for (const adam_case& c : {adam_case{"adam", false, false, false, false},
                             adam_case{"adam", true, false, false, false},
                             adam_case{"adam", false, true, false, false},
                             adam_case{"adam", false, false, true, false},
                             adam_case{"adamw", false, false, false, true},
                             adam_case{"adamw", false, false, false, false}}) {
    SCOPED_TRACE(c.op + (c.beta_tensors ? " beta tensors" : "") + (c.skip ? " skip" : "") +
                 (c.global_pow ? " global pow" : "") + (c.with_decay ? " decay" : ""));
    const shape_t dims = {9, 31};
    tensor p = random(dims, -1.f, 1.f, 32), g = random(dims, -1.f, 1.f, 33);
    tensor m1 = random(dims, -0.1f, 0.1f, 34), m2 = random(dims, 0.f, 0.1f, 35);
    tensor lr = scalar(0.01f), b1p = scalar(0.9f * 0.9f), b2p = scalar(0.999f * 0.999f);
    tensor b1t = scalar(0.8f), b2t = scalar(0.99f), epst = scalar(1e-6f);
    tensor skip = tensor::from_vector(std::vector<bool>{true}, {1});
    slots in = {{"Param", &p},     {"Grad", &g},         {"Moment1", &m1},  {"Moment2", &m2},
                {"LearningRate", &lr}, {"Beta1Pow", &b1p}, {"Beta2Pow", &b2p}};
    if (c.beta_tensors) {
      in.push_back({"Beta1Tensor", &b1t});
      in.push_back({"Beta2Tensor", &b2t});
      in.push_back({"EpsilonTensor", &epst});
    }
    if (c.skip) in.push_back({"SkipUpdate", &skip});
    attrs as = {{"multi_precision", false}, {"beta1", 0.9f}, {"beta2", 0.999f},
                {"epsilon", 1e-8f},          {"use_global_beta_pow", c.global_pow}};
    if (c.op == "adamw") {
      as.push_back({"lr_ratio", 0.5f});
      as.push_back({"with_decay", c.with_decay});
      as.push_back({"coeff", 0.02f});
    }
    tensor cp, cm1, cm2, cb1, cb2;
    run_cpu(c.op, in,
            {{"ParamOut", &cp}, {"Moment1Out", &cm1}, {"Moment2Out", &cm2},
             {"Beta1PowOut", &cb1}, {"Beta2PowOut", &cb2}},
            as);
    const adam_inputs ai{lr.data<float>(),
                         b1p.data<float>(),
                         b2p.data<float>(),
                         {c.beta_tensors ? b1t.data<float>() : nullptr, 0.9f},
                         {c.beta_tensors ? b2t.data<float>() : nullptr, 0.999f},
                         {c.beta_tensors ? epst.data<float>() : nullptr, 1e-8f},
                         c.op == "adamw" ? 0.5f : 1.f,
                         c.with_decay ? 0.02f : 0.f,
                         c.skip ? skip.data<bool>() : nullptr};
    tensor mp = empty_like(p), mm1 = empty_like(p), mm2 = empty_like(p);
    tensor mb1(dtype::fp32, {1}), mb2(dtype::fp32, {1});
    for_each(p.numel(), adam_map{ai, p.data<float>(), g.data<float>(), m1.data<float>(),
                                 m2.data<float>(), mp.data<float>(), mm1.data<float>(),
                                 mm2.data<float>()});
    adam_pow_map{ai, c.global_pow, mb1.data<float>(), mb2.data<float>()}(0);
    EXPECT_TRUE(close(mp, cp));
    EXPECT_TRUE(close(mm1, cm1));
    EXPECT_TRUE(close(mm2, cm2));
    EXPECT_TRUE(close(mb1, cb1));
    EXPECT_TRUE(close(mb2, cb2));
  }
}

// --- dropout -------------------------------------------------------------------------------

TEST(CudaFunctors, DropoutMaskAndScalingMatchCpu) {
  for (const std::string mode : {"upscale_in_train", "downgrade_in_infer"})
    for (const bool fix_seed : {false, true}) {
      SCOPED_TRACE(mode + (fix_seed ? " fix_seed" : ""));
      const attrs as = {{"dropout_prob", 0.3f}, {"dropout_implementation", mode},
                        {"is_test", false},     {"seed", std::int32_t{7}},
                        {"fix_seed", fix_seed}};
      tensor x = random({31, 17}, -1.f, 1.f, 36);
      // The CPU kernel's context is kept across calls: the second call is step 1.
      kernel_context::slot_map in{{"X", {&x}}};
      tensor cpu_out, cpu_mask;
      kernel_context::slot_map out{{"Out", {&cpu_out}}, {"Mask", {&cpu_mask}}};
      attribute_map a;
      for (const auto& [name, value] : as) a.set(name, value);
      kernel_context ctx("dropout", in, out, a, place::cpu(2));
      const kernel_fn& fn = *kernel_registry::global().find("dropout", place::kind::cpu);
      for (std::uint64_t step = 0; step < 2; ++step) {
        fn(ctx);
        auto g = dropout_generator(step, 2, 7, fix_seed, std::nullopt);
        const std::vector<std::uint8_t> mask = draw_dropout_mask(g, 0.3f, x.numel());
        ASSERT_TRUE(std::equal(mask.begin(), mask.end(), cpu_mask.data<std::uint8_t>()));
        tensor mine = empty_like(x);
        const dropout_fn f{mode == "upscale_in_train", 1.f - 0.3f};
        for_each(x.numel(), binary_map<dropout_fn, std::uint8_t>{x.data<float>(), mask.data(),
                                                                 mine.data<float>(), f});
        EXPECT_TRUE(close(mine, cpu_out));
        tensor dout = random(x.shape(), -1.f, 1.f, 37), cpu_dx;
        run_cpu("dropout_grad", {{"Out@GRAD", &dout}, {"Mask", &cpu_mask}}, {{"X@GRAD", &cpu_dx}}, as);
        tensor dx = empty_like(x);
        for_each(x.numel(), binary_map<dropout_fn, std::uint8_t>{dout.data<float>(), mask.data(),
                                                                 dx.data<float>(), f});
        EXPECT_TRUE(close(dx, cpu_dx));
      }
    }
  // A Seed input fixes the seed.
  auto a = dropout_generator(0, 0, 7, false, std::int32_t{11});
  auto b = dropout_generator(5, 0, 3, false, std::int32_t{11});
  EXPECT_EQ(draw_dropout_mask(a, 0.5f, 100), draw_dropout_mask(b, 0.5f, 100));
}

TEST(CudaFunctors, DropoutInferenceMatchesCpu) {
  tensor x = random({100}, -1.f, 1.f, 38), cpu_out;
  run_cpu("dropout", {{"X", &x}}, {{"Out", &cpu_out}},
          {{"dropout_prob", 0.25f}, {"dropout_implementation", std::string("downgrade_in_infer")},
           {"is_test", true}, {"seed", std::int32_t{0}}, {"fix_seed", false}});
  tensor out = empty_like(x);
  for_each(x.numel(), unary_map<multiply_fn>{x.data<float>(), out.data<float>(), {1.f - 0.25f}});
  EXPECT_TRUE(close(out, cpu_out));
}

// --- shape ops -----------------------------------------------------------------------------

TEST(CudaFunctors, TransposeMatchesCpu) {
  for (const std::vector<std::int32_t>& axis :
       {std::vector<std::int32_t>{3, 1, 0, 2}, {0, 1, 2, 3}, {-1, 0, 1, 2}}) {
    tensor x = random({2, 3, 4, 5}, -1.f, 1.f, 39), cpu_out, cpu_xshape;
    run_cpu("transpose2", {{"X", &x}}, {{"Out", &cpu_out}, {"XShape", &cpu_xshape}},
            {{"axis", axis}});
    std::vector<std::size_t> perm;
    for (std::int32_t a : axis) perm.push_back(static_cast<std::size_t>(a < 0 ? a + 4 : a));
    tensor out(dtype::fp32, cpu_out.shape());
    for_each(x.numel(), permute_map<std::uint32_t>{static_cast<const std::uint32_t*>(x.raw()),
                                                   static_cast<std::uint32_t*>(out.raw()),
                                                   permute_geometry::make(x.shape(), perm)});
    EXPECT_TRUE(close(out, cpu_out, 0.f));
  }
}

TEST(CudaFunctors, FillMatchesCpu) {
  const std::vector<std::int64_t> dims = {3, 5};
  const attrs as = {{"dtype", std::int32_t{3}}, {"shape", dims}, {"value", 0.f},
                    {"str_value", std::string("9007199254740993")}};
  tensor cpu_out;
  run_cpu("fill_constant", {}, {{"Out", &cpu_out}}, as);
  const auto v = fill_value<std::int64_t>(0.f, "9007199254740993"); // what the kernel fills with
  ASSERT_TRUE(v.problem.empty());
  tensor out(dtype::int64, cpu_out.shape());
  for_each(out.numel(), fill_map<std::int64_t>{out.data<std::int64_t>(), v.value});
  EXPECT_TRUE(std::equal(out.values<std::int64_t>().begin(), out.values<std::int64_t>().end(),
                         cpu_out.values<std::int64_t>().begin()));
}

TEST(CudaFunctors, CastMatchesCpu) {
  tensor x = random({50}, -3.f, 3.f, 40);
  x.data<float>()[0] = 0.f;
  tensor cpu_i, cpu_b;
  run_cpu("cast", {{"X", &x}}, {{"Out", &cpu_i}},
          {{"in_dtype", std::int32_t{5}}, {"out_dtype", std::int32_t{3}}});
  run_cpu("cast", {{"X", &x}}, {{"Out", &cpu_b}},
          {{"in_dtype", std::int32_t{5}}, {"out_dtype", std::int32_t{0}}});
  tensor i(dtype::int64, x.shape());
  tensor b(dtype::boolean, x.shape());
  for_each(x.numel(), unary_map<cast_fn<std::int64_t>, float, std::int64_t>{
                          x.data<float>(), i.data<std::int64_t>(), {}});
  for_each(x.numel(), unary_map<cast_fn<bool>, float, bool>{x.data<float>(), b.data<bool>(), {}});
  EXPECT_TRUE(std::equal(i.values<std::int64_t>().begin(), i.values<std::int64_t>().end(),
                         cpu_i.values<std::int64_t>().begin()));
  EXPECT_TRUE(std::equal(b.values<bool>().begin(), b.values<bool>().end(),
                         cpu_b.values<bool>().begin()));
}

// --- pool2d, conv2d, batch_norm --------------------------------------------------------------

struct sink {
  void fail(const std::string& m) const { throw error(m); }
};

TEST(CudaWindows, Pool2dMatchesCpu) {
  using ints = std::vector<std::int32_t>;
  struct pool_case {
    std::string type;
    ints ksize, strides, paddings;
    bool exclusive, ceil_mode, global;
  };
  for (const pool_case& c : {pool_case{"max", {2, 2}, {2, 2}, {0, 0}, true, false, false},
                             pool_case{"max", {3, 3}, {2, 2}, {1, 1}, true, true, false},
                             pool_case{"avg", {3, 3}, {2, 2}, {1, 1}, true, false, false},
                             pool_case{"avg", {3, 2}, {2, 2}, {1, 0}, false, true, false},
                             pool_case{"avg", {2, 2}, {1, 1}, {0, 1, 1, 0}, false, false, false},
                             pool_case{"avg", {1, 1}, {1, 1}, {0, 0}, true, false, true},
                             pool_case{"max", {1, 1}, {1, 1}, {0, 0}, true, false, true}}) {
    SCOPED_TRACE(c.type + " ksize " + to_string(c.ksize) + " paddings " + to_string(c.paddings) +
                 (c.exclusive ? " exclusive" : "") + (c.ceil_mode ? " ceil" : "") +
                 (c.global ? " global" : ""));
    tensor x = random({2, 3, 7, 8}, -1.f, 1.f, 50);
    // Repeated values, so that max pooling's first-maximum rule matters.
    for (std::int64_t i = 0; i < x.numel(); i += 4) x.data<float>()[i] = 0.5f;
    const attrs as = {{"pooling_type", c.type},       {"ksize", c.ksize},
                      {"strides", c.strides},         {"paddings", c.paddings},
                      {"exclusive", c.exclusive},     {"ceil_mode", c.ceil_mode},
                      {"global_pooling", c.global},   {"adaptive", false},
                      {"padding_algorithm", std::string("EXPLICIT")},
                      {"data_format", std::string("NCHW")}};
    tensor cpu_out;
    run_cpu("pool2d", {{"X", &x}}, {{"Out", &cpu_out}}, as);
    attribute_map a;
    for (const auto& [name, value] : as) a.set(name, value);
    const pool_geometry geo = infer_pool(sink{}, x.shape(), a);
    const pool_plan p{window_1d::of(geo.axes[0]), window_1d::of(geo.axes[1]), geo.max, geo.exclusive};
    tensor out(dtype::fp32, geo.out);
    for_each(out.numel(), pool_forward_map{x.data<float>(), out.data<float>(), p});
    EXPECT_TRUE(close(out, cpu_out, 1e-5f, 1e-6f));
    tensor dout = random(geo.out, -1.f, 1.f, 51), cpu_dx;
    run_cpu("pool2d_grad", {{"X", &x}, {"Out", &cpu_out}, {"Out@GRAD", &dout}}, {{"X@GRAD", &cpu_dx}}, as);
    tensor dx = empty_like(x);
    for_each(x.numel(), pool_backward_map{x.data<float>(), cpu_out.data<float>(), dout.data<float>(),
                                          dx.data<float>(), p});
    EXPECT_TRUE(close(dx, cpu_dx, 1e-5f, 1e-6f));
  }
}

TEST(CudaWindows, CudnnPaddingChoiceGivesTheGeometrysExtents) {
  // cuDNN pads both ends alike and computes out = (in + 2 * pad - span) / stride + 1: the
  // choice must give the geometry's out on every axis, keep cuDNN's own padding when the
  // geometry's pad_begin does that, and pad a copy otherwise. Swept over extents, kernels,
  // strides, dilations, all (begin, end) paddings, and SAME / VALID.
  using ints = std::vector<std::int32_t>;
  int symmetric = 0, copied = 0, checked = 0;
  for (const std::string algorithm : {"EXPLICIT", "SAME", "VALID"})
    for (std::int32_t in = 1; in <= 9; ++in)
      for (std::int32_t kernel = 1; kernel <= 4; ++kernel)
        for (std::int32_t stride = 1; stride <= 3; ++stride)
          for (std::int32_t dilation = 1; dilation <= 2; ++dilation)
            for (std::int32_t begin = 0; begin <= 3; ++begin)
              for (std::int32_t end = 0; end <= 3; ++end) {
                const window_attrs w{.kernel = {kernel, kernel},
                                     .strides = {stride, stride},
                                     .paddings = ints{begin, end, end, begin},
                                     .dilations = {dilation, dilation},
                                     .padding_algorithm = algorithm};
                std::array<window_axis, 2> axes;
                try {
                  axes = window_axes(sink{}, {in, in}, w);
                } catch (const error&) {
                  continue; // the window does not fit: the geometry refuses it
                }
                for (const window_axis& a : axes) {
                  SCOPED_TRACE(algorithm + " in " + std::to_string(a.in) + " kernel " +
                               std::to_string(a.kernel) + " stride " + std::to_string(a.stride) +
                               " dilation " + std::to_string(a.dilation) + " paddings " +
                               std::to_string(a.pad_begin) + ", " + std::to_string(a.pad_end));
                  const cudnn_axis c = cudnn_axis_of(a);
                  ++checked;
                  ASSERT_GE(c.in + 2 * c.pad, a.span());
                  EXPECT_EQ((c.in + 2 * c.pad - a.span()) / a.stride + 1, a.out);
                  if (c.copied) {
                    ++copied;
                    EXPECT_EQ(c.pad, 0);
                    EXPECT_EQ(c.before, a.pad_begin);
                    EXPECT_EQ(c.in, a.pad_begin + a.in + a.exact_pad_end());
                    // cuDNN's own padding would not have given the geometry's extent.
                    const std::int64_t room = a.in + 2 * a.pad_begin - a.span();
                    EXPECT_TRUE(room < 0 || room / a.stride + 1 != a.out);
                  } else {
                    ++symmetric;
                    EXPECT_EQ(c.in, a.in);
                    EXPECT_EQ(c.pad, a.pad_begin);
                    EXPECT_EQ(c.before, 0);
                  }
                }
              }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(symmetric, 100);
  EXPECT_GT(copied, 100);
  // Named cases: symmetric paddings stay with cuDNN; asymmetric ones and SAME with an odd
  // total padding are copied; SAME with an even total is not.
  const auto axis = [](std::int32_t in, std::int32_t kernel, std::int32_t stride, ints paddings,
                       const std::string& algorithm) {
    return window_axes(sink{}, {in, in},
                       {.kernel = {kernel, kernel}, .strides = {stride, stride},
                        .paddings = std::move(paddings), .dilations = {1, 1},
                        .padding_algorithm = algorithm})[0];
  };
  EXPECT_FALSE(cudnn_axis_of(axis(7, 3, 1, {1, 1}, "EXPLICIT")).copied);
  EXPECT_TRUE(cudnn_axis_of(axis(7, 3, 1, {0, 1, 0, 1}, "EXPLICIT")).copied);
  EXPECT_TRUE(cudnn_axis_of(axis(7, 3, 1, {2, 0, 2, 0}, "EXPLICIT")).copied);
  EXPECT_FALSE(cudnn_axis_of(axis(7, 3, 1, {0, 0}, "SAME")).copied); // total 2: 1 + 1
  EXPECT_TRUE(cudnn_axis_of(axis(7, 2, 1, {0, 0}, "SAME")).copied);  // total 1: 0 + 1
  EXPECT_FALSE(cudnn_axis_of(axis(7, 3, 2, {5, 5}, "VALID")).copied);
  // A larger end padding the last window never reaches is cuDNN's symmetric case too.
  EXPECT_FALSE(cudnn_axis_of(axis(7, 3, 2, {1, 2, 1, 2}, "EXPLICIT")).copied);
}

TEST(CudaWindows, PadAndCropMapsPlaceThePlaneAtItsOffset) {
  const std::int64_t planes = 6, h = 5, w = 4;
  const pad_plan p{h, w, 8, 7, 1, 2}; // 1 row above and 2 below, 2 columns left and 1 right
  tensor x = random({2, 3, h, w}, 0.5f, 1.5f, 60); // no zeros: padding shows as 0
  std::vector<float> padded(static_cast<std::size_t>(planes * p.padded_h * p.padded_w), -1.f);
  for_each(static_cast<std::int64_t>(padded.size()), pad_map{x.data<float>(), padded.data(), p});
  for (std::int64_t plane = 0; plane < planes; ++plane)
    for (std::int64_t ph = 0; ph < p.padded_h; ++ph)
      for (std::int64_t pw = 0; pw < p.padded_w; ++pw) {
        const float v = padded[static_cast<std::size_t>((plane * p.padded_h + ph) * p.padded_w + pw)];
        const bool inside = ph >= 1 && ph < 1 + h && pw >= 2 && pw < 2 + w;
        const float want = inside ? x.data<float>()[(plane * h + ph - 1) * w + pw - 2] : 0.f;
        ASSERT_EQ(v, want) << "plane " << plane << " (" << ph << ", " << pw << ")";
      }
  EXPECT_EQ(p.source(0, 0), -1);
  EXPECT_EQ(p.source(1, 2), 0);
  EXPECT_EQ(p.source(5, 5), 4 * w + 3);
  EXPECT_EQ(p.source(6, 2), -1);
  EXPECT_EQ(p.source(1, 6), -1);
  // Cropping the padded tensor gives the input back; a gradient's padding share is dropped.
  std::vector<float> grad(padded.size());
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = padded[i] != 0.f ? padded[i] : 100.f;
  tensor back = empty_like(x);
  for_each(x.numel(), crop_map{grad.data(), back.data<float>(), p});
  EXPECT_TRUE(close(back, x, 0.f));
}

/// What cuDNN computes for a cudnn_conv (its documented cross-correlation: symmetric
/// padding cc.h.pad / cc.w.pad, strides, dilations, groups), by loops over the input as cuDNN
/// sees it: forward (y), data gradient (dx, the cuDNN input's extents) and filter gradient
/// (dw), each overwriting its output (beta 0).
struct cudnn_like {
  const cudnn_conv& cc;

  /// The input position output o's tap k reads along an axis, or -1 in cuDNN's padding.
  static std::int64_t at(const cudnn_axis& a, const window_axis& g, std::int64_t o, std::int64_t k) {
    const std::int64_t i = o * g.stride - a.pad + k * g.dilation;
    return i >= 0 && i < a.in ? i : -1;
  }
  template <class Visit>
  void taps(Visit visit) const { // visit(x index, w index, y index)
    const std::int64_t mg = cc.m / cc.groups, cg = cc.c / cc.groups;
    const window_axis &gh = cc.h_window, &gw = cc.w_window;
    for (std::int64_t img = 0; img < cc.n; ++img)
      for (std::int64_t m = 0; m < cc.m; ++m)
        for (std::int64_t oh = 0; oh < gh.out; ++oh)
          for (std::int64_t ow = 0; ow < gw.out; ++ow)
            for (std::int64_t ci = 0; ci < cg; ++ci)
              for (std::int64_t kh = 0; kh < gh.kernel; ++kh)
                for (std::int64_t kw = 0; kw < gw.kernel; ++kw) {
                  const std::int64_t ih = at(cc.h, gh, oh, kh), iw = at(cc.w, gw, ow, kw);
                  if (ih < 0 || iw < 0) continue;
                  const std::int64_t c = m / mg * cg + ci;
                  visit(((img * cc.c + c) * cc.h.in + ih) * cc.w.in + iw,
                        ((m * cg + ci) * gh.kernel + kh) * gw.kernel + kw,
                        ((img * cc.m + m) * gh.out + oh) * gw.out + ow);
                }
  }
  std::vector<float> forward(const float* x, const float* w) const {
    std::vector<double> y(static_cast<std::size_t>(cc.n * cc.m * cc.h_window.out * cc.w_window.out));
    taps([&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { y[yi] += double(x[xi]) * w[wi]; });
    return {y.begin(), y.end()};
  }
  std::vector<float> data_grad(const float* w, const float* dy) const {
    std::vector<double> dx(static_cast<std::size_t>(cc.n * cc.c * cc.h.in * cc.w.in));
    taps([&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { dx[xi] += double(w[wi]) * dy[yi]; });
    return {dx.begin(), dx.end()};
  }
  std::vector<float> filter_grad(const float* x, const float* dy, std::int64_t filter_numel) const {
    std::vector<double> dw(static_cast<std::size_t>(filter_numel));
    taps([&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { dw[wi] += double(x[xi]) * dy[yi]; });
    return {dw.begin(), dw.end()};
  }
};

tensor from(const std::vector<float>& v, const shape_t& dims) {
  tensor t(dtype::fp32, dims);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

TEST(CudaWindows, Conv2dAsCudnnRunsItMatchesCpu) {
  // The CUDA kernel's plan, replayed on the host: the padding choice, the padded copy
  // (pad_map), cuDNN's symmetric convolution (by loops, above), and the crop of Input@GRAD
  // (crop_map), against the CPU kernels.
  /// A convolution, and whether the plan must pad a copy of its input.
  struct replay_case {
    testing::conv_case conv;
    bool copied;
  };
  for (const auto& [cc, copied] :
       {replay_case{{"conv2d", 4, 6, 1, {1, 1}, {1, 1}, {1, 1}, "EXPLICIT"}, false},
        replay_case{{"conv2d", 4, 6, 2, {2, 1}, {1, 2}, {1, 1}, "EXPLICIT"}, false},
        replay_case{{"conv2d", 3, 5, 1, {1, 2}, {0, 0}, {2, 1}, "EXPLICIT"}, false},
        replay_case{{"conv2d", 2, 4, 1, {2, 2}, {0, 0}, {1, 1}, "SAME"}, false},
        replay_case{{"conv2d", 2, 4, 1, {1, 1}, {0, 0}, {1, 1}, "SAME"}, true},
        replay_case{{"conv2d", 3, 4, 1, {1, 1}, {0, 2, 1, 0}, {1, 1}, "EXPLICIT"}, true},
        replay_case{{"conv2d", 4, 4, 2, {2, 1}, {2, 0, 0, 1}, {2, 2}, "EXPLICIT"}, true},
        replay_case{{"conv2d", 2, 3, 1, {1, 1}, {0, 0}, {1, 1}, "VALID"}, false},
        replay_case{{"depthwise_conv2d", 4, 4, 4, {1, 1}, {1, 1}, {1, 1}, "EXPLICIT"}, false},
        replay_case{{"depthwise_conv2d", 4, 8, 4, {1, 2}, {1, 0, 0, 1}, {1, 1}, "EXPLICIT"}, true}}) {
    SCOPED_TRACE(cc.describe());
    const std::int64_t n = 2, kh = 3, kw = 2;
    tensor input = random({n, cc.c, 7, 6}, -1.f, 1.f, 52);
    tensor filter = random({cc.m, cc.c / cc.groups, kh, kw}, -1.f, 1.f, 53);
    const attrs as = cc.attrs();
    tensor cpu_out;
    run_cpu(cc.op, {{"Input", &input}, {"Filter", &filter}}, {{"Output", &cpu_out}}, as);
    attribute_map a;
    for (const auto& [name, value] : as) a.set(name, value);
    const conv_geometry geo = infer_conv(sink{}, input.shape(), filter.shape(), a);
    const cudnn_conv plan = cudnn_conv::of(geo, input.shape(), filter.shape());
    EXPECT_EQ(plan.copied(), copied);

    // The input as cuDNN reads it.
    tensor x = input;
    if (plan.copied()) {
      x = tensor(dtype::fp32, plan.input_dims());
      for_each(x.numel(), pad_map{input.data<float>(), x.data<float>(), pad_plan::of(plan)});
    }
    const cudnn_like run{plan};
    EXPECT_TRUE(close(from(run.forward(x.data<float>(), filter.data<float>()), geo.out), cpu_out,
                      1e-5f, 1e-5f));

    tensor dout = random(geo.out, -1.f, 1.f, 54), cpu_dx, cpu_dw;
    run_cpu(cc.op + "_grad", {{"Input", &input}, {"Filter", &filter}, {"Output@GRAD", &dout}},
            {{"Input@GRAD", &cpu_dx}, {"Filter@GRAD", &cpu_dw}}, as);
    const std::vector<float> dx_cudnn = run.data_grad(filter.data<float>(), dout.data<float>());
    tensor dx = empty_like(input);
    if (plan.copied())
      for_each(dx.numel(), crop_map{dx_cudnn.data(), dx.data<float>(), pad_plan::of(plan)});
    else
      dx = from(dx_cudnn, input.shape());
    EXPECT_TRUE(close(dx, cpu_dx, 1e-5f, 1e-5f));
    EXPECT_TRUE(close(from(run.filter_grad(x.data<float>(), dout.data<float>(), filter.numel()),
                           filter.shape()),
                      cpu_dw, 1e-5f, 1e-5f));
  }
}

/// A plan counting the terms its partial visits (each term once: the total is the count),
/// and, in `seen`, how often each term was visited.
struct term_count_plan {
  std::int64_t terms;
  std::vector<int>* seen;
  double partial(std::int64_t, unsigned t, unsigned threads) const {
    return strided_fold(
        terms, t, threads, 0.0,
        [&](std::int64_t r) {
          ++(*seen)[static_cast<std::size_t>(r)];
          return 1.0;
        },
        plus_op{});
  }
};

TEST(CudaReduce, SplitReductionsVisitEveryTermOnceInChunksOfEnoughTerms) {
  EXPECT_EQ(split_chunks(512, 1 << 20), 1) << "enough elements for the GPU: a block each";
  EXPECT_EQ(split_chunks(32, 3000), 1) << "too few terms to split";
  for (const auto& [outputs, terms] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {32, 50176}, {64, 12544}, {1, 1 << 20}, {3, 12800}, {100, 4096}, {255, 1 << 22}}) {
    const std::int64_t chunks = split_chunks(outputs, terms);
    SCOPED_TRACE(std::to_string(outputs) + " x " + std::to_string(terms) + ": " + std::to_string(chunks) + " chunks");
    EXPECT_GT(chunks, 1);
    EXPECT_GE(terms / chunks, split_min_terms);
    EXPECT_LE(outputs * chunks, split_target_blocks + outputs);
    std::vector<int> seen(static_cast<std::size_t>(terms));
    EXPECT_EQ(simulate_split_reduce(term_count_plan{terms, &seen}, 0, chunks, reduce_threads),
              static_cast<double>(terms));
    EXPECT_EQ(*std::min_element(seen.begin(), seen.end()), 1);
    EXPECT_EQ(*std::max_element(seen.begin(), seen.end()), 1);
  }
}

TEST(CudaWindows, BatchNormStatisticsSplitOverBlocksEqualOneBlockPerChannel) {
  // The CNN's first layer in small: few channels of many terms, where the GPU kernels split
  // each channel's sums over several blocks (reduce_blocks_split).
  const shape_t dims{8, 3, 40, 40};
  std::vector<bool> reduced(dims.size(), true);
  reduced[1] = false;
  const reduce_geometry g = reduce_geometry::make(dims, reduced);
  const std::int64_t chunks = split_chunks(3, g.reduce_count());
  ASSERT_GT(chunks, 1);
  tensor x = random(dims, -2.f, 3.f, 61), dy = random(dims, -1.f, 1.f, 62);
  const tensor channels(dtype::fp32, {3});
  tensor mean = empty_like(channels), variance = empty_like(channels), inv_std = empty_like(channels),
         sum = empty_like(channels), split_mean = empty_like(channels), split_variance = empty_like(channels),
         split_sum = empty_like(channels);
  replay_blocks(3, reduce_threads, bn_mean_plan{x.data<float>(), mean.data<float>(), g});
  replay_blocks(3, reduce_threads, bn_variance_plan{x.data<float>(), mean.data<float>(), variance.data<float>(), g});
  for (std::int64_t c = 0; c < 3; ++c) {
    const bn_mean_plan m{x.data<float>(), split_mean.data<float>(), g};
    m.finish(c, simulate_split_reduce(m, c, chunks, reduce_threads));
  }
  for (std::int64_t c = 0; c < 3; ++c) {
    const bn_variance_plan v{x.data<float>(), split_mean.data<float>(), split_variance.data<float>(), g};
    v.finish(c, simulate_split_reduce(v, c, chunks, reduce_threads));
    inv_std.data<float>()[c] = bn_inverse_std(variance.data<float>()[c], 1e-5f);
  }
  EXPECT_TRUE(close(split_mean, mean, 1e-6f, 1e-7f));
  EXPECT_TRUE(close(split_variance, variance, 1e-6f, 1e-7f));
  for (const bool xhat : {false, true}) {
    const bn_grad_sum_plan one{x.data<float>(), dy.data<float>(), mean.data<float>(), inv_std.data<float>(),
                               sum.data<float>(), xhat, g};
    replay_blocks(3, reduce_threads, one);
    bn_grad_sum_plan split = one;
    split.sum = split_sum.data<float>();
    for (std::int64_t c = 0; c < 3; ++c) split.finish(c, simulate_split_reduce(split, c, chunks, reduce_threads));
    EXPECT_TRUE(close(split_sum, sum, 1e-6f, 1e-6f)) << (xhat ? "Scale@GRAD" : "Bias@GRAD");
  }
}

TEST(CudaWindows, BatchNormMatchesCpu) {
  for (const bool global : {false, true})
    for (const shape_t& dims : {shape_t{4, 3, 5, 6}, shape_t{16, 5}}) {
      SCOPED_TRACE(to_string(dims) + (global ? " global statistics" : " training"));
      const std::int64_t c = dims[1];
      tensor x = random(dims, -2.f, 3.f, 55), scale = random({c}, 0.5f, 1.5f, 56),
             bias = random({c}, -1.f, 1.f, 57), mean = random({c}, -0.5f, 0.5f, 58),
             variance = random({c}, 0.5f, 2.f, 59);
      const attrs as = testing::batch_norm_attrs(global);
      tensor cpu_y, cpu_mean_out, cpu_var_out, cpu_saved_mean, cpu_saved_var;
      run_cpu("batch_norm",
              {{"X", &x}, {"Scale", &scale}, {"Bias", &bias}, {"Mean", &mean}, {"Variance", &variance}},
              {{"Y", &cpu_y}, {"MeanOut", &cpu_mean_out}, {"VarianceOut", &cpu_var_out},
               {"SavedMean", &cpu_saved_mean}, {"SavedVariance", &cpu_saved_var}},
              as);
      std::vector<bool> reduced(dims.size(), true);
      reduced[1] = false;
      const reduce_geometry g = reduce_geometry::make(dims, reduced);
      tensor used_mean = mean.clone(), used_var = variance.clone();
      if (!global) {
        replay_blocks(c, reduce_threads, bn_mean_plan{x.data<float>(), used_mean.data<float>(), g});
        replay_blocks(c, 4, bn_variance_plan{x.data<float>(), used_mean.data<float>(),
                                             used_var.data<float>(), g});
      }
      tensor y = empty_like(x);
      for_each(x.numel(), bn_forward_map{x.data<float>(), y.data<float>(), scale.data<float>(),
                                         bias.data<float>(), used_mean.data<float>(),
                                         used_var.data<float>(), 1e-5f, g});
      EXPECT_TRUE(close(y, cpu_y, 1e-5f, 1e-5f));
      tensor mean_out = empty_like(mean), var_out = empty_like(mean), saved_mean = empty_like(mean),
             saved_var = empty_like(mean);
      for_each(c, bn_stats_map{mean.data<float>(), variance.data<float>(), used_mean.data<float>(),
                               used_var.data<float>(), mean_out.data<float>(), var_out.data<float>(),
                               saved_mean.data<float>(), saved_var.data<float>(), 0.9f, 1e-5f, global});
      EXPECT_TRUE(close(mean_out, cpu_mean_out, 1e-5f, 1e-6f));
      EXPECT_TRUE(close(var_out, cpu_var_out, 1e-5f, 1e-6f));
      EXPECT_TRUE(close(saved_mean, cpu_saved_mean, 1e-5f, 1e-6f));
      EXPECT_TRUE(close(saved_var, cpu_saved_var, 1e-5f, 1e-6f));

      tensor dy = random(dims, -1.f, 1.f, 60), cpu_dx, cpu_dscale, cpu_dbias;
      run_cpu("batch_norm_grad",
              {{"X", &x}, {"Scale", &scale}, {"Bias", &bias}, {"Y@GRAD", &dy},
               {"SavedMean", &cpu_saved_mean}, {"SavedVariance", &cpu_saved_var},
               {"MeanOut", &cpu_mean_out}, {"VarianceOut", &cpu_var_out}},
              {{"X@GRAD", &cpu_dx}, {"Scale@GRAD", &cpu_dscale}, {"Bias@GRAD", &cpu_dbias}}, as);
      tensor grad_mean = global ? cpu_mean_out.clone() : cpu_saved_mean.clone();
      tensor inv_std = empty_like(mean);
      if (global)
        for_each(c, bn_inverse_std_map{cpu_var_out.data<float>(), inv_std.data<float>(), 1e-5f});
      else
        inv_std = cpu_saved_var.clone();
      tensor dscale = empty_like(mean), dbias = empty_like(mean), dx = empty_like(x);
      replay_blocks(c, reduce_threads, bn_grad_sum_plan{x.data<float>(), dy.data<float>(),
                                                        grad_mean.data<float>(), inv_std.data<float>(),
                                                        dbias.data<float>(), false, g});
      replay_blocks(c, reduce_threads, bn_grad_sum_plan{x.data<float>(), dy.data<float>(),
                                                        grad_mean.data<float>(), inv_std.data<float>(),
                                                        dscale.data<float>(), true, g});
      for_each(x.numel(), bn_backward_map{x.data<float>(), dy.data<float>(), dx.data<float>(),
                                          scale.data<float>(), grad_mean.data<float>(),
                                          inv_std.data<float>(), dscale.data<float>(),
                                          dbias.data<float>(), global, g});
      EXPECT_TRUE(close(dbias, cpu_dbias, 1e-5f, 1e-5f));
      EXPECT_TRUE(close(dscale, cpu_dscale, 1e-5f, 1e-5f));
      EXPECT_TRUE(close(dx, cpu_dx, 1e-4f, 1e-5f));
    }
}

} // namespace
} // namespace pe::cuda
