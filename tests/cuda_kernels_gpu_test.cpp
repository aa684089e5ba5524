// Every op's GPU kernel against its CPU kernel: the same host inputs are run through the CPU
// kernel and, copied to gpu:0, through the GPU kernel on the place's compute stream; every
// output, starting as poison, must come back within 1e-5 relative (plus 1e-6 absolute;
// integers and masks exactly). The gpu instances skip with a message when the build has no
// CUDA kernels or no GPU can be opened (no driver, no device: the CUDA device reports what
// cudaGetDeviceCount said). The cpu_harness instances run the same cases with cpu:1 as the target, on every
// machine: they check this file's plumbing and that every kernel accepts each case's
// attributes. The registry coverage test needs no GPU: it runs in every CUDA build.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "devices/device.hpp"
#include "kernels/kernel.hpp"
#include "tests/support/grad_check.hpp"
#include "tests/support/kernel_cases.hpp"

namespace pe {

/// Test names and failure messages show a kind by its name ("gpu"), not its bytes (found
/// by argument-dependent lookup, so in pe itself).
void PrintTo(place::kind kind, std::ostream* os) {
  *os << kind.name();
}

namespace {

using attrs = std::vector<std::pair<std::string, attribute>>;
using named = std::vector<std::pair<std::string, tensor>>;

/// Every op type the CPU registry has (kernels/cpu/*.cpp).
const std::vector<std::string> cpu_ops = {
    "sum", "mul", "mul_grad", "matmul_v2", "matmul_v2_grad", "matmul", "matmul_grad",
    "relu", "relu_grad", "tanh", "tanh_grad", "sigmoid", "sigmoid_grad", "leaky_relu",
    "leaky_relu_grad", "gelu", "gelu_grad", "scale", "mean", "mean_grad", "reduce_mean",
    "reduce_mean_grad", "elementwise_add", "elementwise_add_grad", "elementwise_sub",
    "elementwise_sub_grad", "elementwise_mul", "elementwise_mul_grad", "elementwise_div",
    "elementwise_div_grad", "softmax", "softmax_grad", "log_softmax", "log_softmax_grad",
    "assign", "reshape2", "reshape2_grad", "flatten_contiguous_range",
    "flatten_contiguous_range_grad", "squeeze2", "squeeze2_grad", "unsqueeze2",
    "unsqueeze2_grad", "transpose2", "transpose2_grad", "concat", "concat_grad", "split", "cast",
    "softmax_with_cross_entropy", "softmax_with_cross_entropy_grad", "cross_entropy",
    "cross_entropy_grad", "cross_entropy2", "cross_entropy_grad2", "top_k", "top_k_grad",
    "top_k_v2", "top_k_v2_grad", "accuracy", "dropout", "dropout_grad", "fill_constant",
    "fill_any_like",
    "uniform_random", "gaussian_random", "sgd", "momentum", "adam", "adamw", "conv2d",
    "conv2d_grad", "depthwise_conv2d", "depthwise_conv2d_grad", "pool2d", "pool2d_grad",
    "batch_norm", "batch_norm_grad", "layer_norm", "layer_norm_grad", "lookup_table_v2",
    "lookup_table_v2_grad", "sqrt", "sqrt_grad", "squared_l2_norm", "squared_l2_norm_grad", "reduce_sum",
    "reduce_sum_grad", "elementwise_max", "elementwise_max_grad", "elementwise_min",
    "elementwise_min_grad", "elementwise_pow", "elementwise_pow_grad", "cumsum",
    "less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal", "logical_not",
    "logical_and", "logical_or", "logical_xor", "increment", "select_input", "conditional_block",
    "sync_batch_norm", "sync_batch_norm_grad", "sync_batch_norm_stats", "sync_batch_norm_apply",
    "sync_batch_norm_grad_stats", "sync_batch_norm_grad_apply", "c_allreduce_sum", "sparse_rows_pack",
    "sparse_rows_scatter", "c_broadcast"};

/// The CPU ops without a GPU kernel: those of sparse tables' touched rows in reduce mode (GPU
/// places refuse SELECTED_ROWS gradients by name, before any of these could run).
const std::set<std::string> without_gpu_kernel = {"sparse_rows_pack", "sparse_rows_scatter", "c_broadcast"};

bool built_with_cuda_kernels() {
  return kernel_registry::global().find("relu", place::kind::gpu) != nullptr;
}

TEST(CudaKernelRegistry, EveryCpuOpHasAGpuKernel) {
  if (!built_with_cuda_kernels()) GTEST_SKIP() << "built without the CUDA kernels (PE_WITH_CUDA)";
  for (const std::string& op : cpu_ops) {
    EXPECT_NE(kernel_registry::global().find(op, place::kind::cpu), nullptr) << op;
    const bool has_gpu = kernel_registry::global().find(op, place::kind::gpu) != nullptr;
    EXPECT_EQ(has_gpu, !without_gpu_kernel.contains(op)) << op;
  }
}

/// tests/support's random tensors, in the argument order these tests read best in.
tensor random(const shape_t& dims, float lo, float hi, unsigned seed) {
  return testing::random_tensor(dims, seed, lo, hi);
}
tensor labels(const shape_t& dims, std::int64_t classes, unsigned seed) {
  return testing::random_labels(dims, classes, seed);
}

tensor scalar(float v) { return tensor::from_vector(std::vector<float>{v}, {1}); }

/// Runs `op`'s CPU kernel on cpu:0 and returns its outputs, one per slot of `outputs`: the
/// dims and values a case's grad op reads (Out, Mask, Indices, the saved statistics).
std::vector<tensor> cpu_outputs(const std::string& op, const named& inputs,
                                const std::vector<std::string>& outputs, const attrs& as) {
  attribute_map a;
  for (const auto& [n, v] : as) a.set(n, v);
  std::vector<tensor> in, out(outputs.size());
  for (const auto& [slot, t] : inputs) in.push_back(t.clone());
  kernel_context::slot_map ins, outs;
  for (std::size_t i = 0; i < inputs.size(); ++i) ins[inputs[i].first].push_back(&in[i]);
  for (std::size_t i = 0; i < outputs.size(); ++i) outs[outputs[i]].push_back(&out[i]);
  kernel_context ctx(op, ins, outs, a, place::cpu(0));
  (*kernel_registry::global().find(op, place::kind::cpu))(ctx);
  return out;
}

/// One op run: inputs by slot (a slot may repeat: X[0], X[1], ...), output slots (repeats
/// likewise), attributes. Outputs named in `shape_only` are compared by dims (XShape).
struct op_case {
  std::string op;
  named inputs;
  std::vector<std::string> outputs;
  attrs as;
  std::set<std::string> shape_only = {"XShape"};
  /// Output index -> input index: that output is bound to the input's tensor (in place, as
  /// the engine binds ParamOut to Param).
  std::map<std::size_t, std::size_t> in_place = {};
  /// How often the kernel runs on each side, through one kernel_context (whose next_call()
  /// then counts 0, 1, ...: dropout draws a new mask per call); outputs are compared after
  /// the last call.
  int calls = 1;
};

::testing::AssertionResult same(const tensor& gpu, const tensor& cpu, bool shape_only) {
  if (gpu.shape() != cpu.shape() || gpu.type() != cpu.type())
    return ::testing::AssertionFailure() << "GPU " << to_string(gpu.type()) << " "
                                         << to_string(gpu.shape()) << ", CPU "
                                         << to_string(cpu.type()) << " " << to_string(cpu.shape());
  if (shape_only) return ::testing::AssertionSuccess();
  if (cpu.type() != dtype::fp32)
    return std::memcmp(gpu.raw(), cpu.raw(), cpu.bytes()) == 0
               ? ::testing::AssertionSuccess()
               : ::testing::AssertionFailure() << "bytes differ";
  auto a = gpu.values<float>();
  auto b = cpu.values<float>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (a[i] == b[i]) continue; // equal infinities (their difference is NaN)
    if (!(std::abs(a[i] - b[i]) <= 1e-5f * std::max(std::abs(a[i]), std::abs(b[i])) + 1e-6f))
      return ::testing::AssertionFailure() << "element " << i << ": GPU " << a[i] << ", CPU " << b[i];
  }
  return ::testing::AssertionSuccess();
}

/// Runs each case on cpu:0 and on the target place: gpu:0, or cpu:1 (the "harness" target,
/// which checks this test's own plumbing and every case's attributes on machines without a
/// GPU: CPU against CPU must agree, and every kernel must accept what the case gives it).
class CudaKernels : public ::testing::TestWithParam<place::kind> {
 protected:
  static void SetUpTestSuite() {
    devices_[place::kind::cpu] = open_device(place::cpu(1));
    if (!built_with_cuda_kernels()) {
      skip_ = "built without the CUDA kernels (PE_WITH_CUDA)";
      return;
    }
    try {
      devices_[place::kind::gpu] = open_device(place::gpu(0));
    } catch (const error& e) {
      skip_ = std::string("no GPU: ") + e.what();
    }
  }
  static void TearDownTestSuite() { devices_.clear(); }
  void SetUp() override {
    if (!devices_[GetParam()]) GTEST_SKIP() << skip_;
  }

  /// Runs `c` on cpu:0 and on the target place and compares every output.
  void expect_match(const op_case& c) const {
    const place::kind target = GetParam();
    SCOPED_TRACE(c.op);
    attribute_map a;
    for (const auto& [name, value] : c.as) a.set(name, value);

    std::vector<tensor> cpu_in, gpu_in(c.inputs.size());
    std::vector<tensor> cpu_out(c.outputs.size()), gpu_out(c.outputs.size()), back(c.outputs.size());
    cpu_in.reserve(c.inputs.size());
    for (const auto& [slot, t] : c.inputs) cpu_in.push_back(t.clone());
    auto slots = [&](std::vector<tensor>& ins, std::vector<tensor>& outs) {
      kernel_context::slot_map in, out;
      for (std::size_t i = 0; i < c.inputs.size(); ++i) in[c.inputs[i].first].push_back(&ins[i]);
      for (std::size_t i = 0; i < c.outputs.size(); ++i) {
        const auto same = c.in_place.find(i);
        out[c.outputs[i]].push_back(same == c.in_place.end() ? &outs[i] : &ins[same->second]);
      }
      return std::pair{in, out};
    };

    auto [ci, co] = slots(cpu_in, cpu_out);
    kernel_context cpu_ctx(c.op, ci, co, a, place::cpu(0));
    const kernel_fn* cpu = kernel_registry::global().find(c.op, place::kind::cpu);
    ASSERT_NE(cpu, nullptr);
    for (int call = 0; call < c.calls; ++call) (*cpu)(cpu_ctx);

    device& dev = *devices_.at(target);
    stream& s = dev.get_stream(stream_kind::compute);
    for (std::size_t i = 0; i < c.inputs.size(); ++i) dev.copy(s, gpu_in[i], c.inputs[i].second);
    // Outputs start as poison of the CPU result's type and dims (every byte 0xFF: NaN in
    // FP32), which a kernel resizing them keeps: an element the target's kernel leaves
    // unwritten then fails the comparison, instead of passing on what fresh memory held.
    std::vector<tensor> poison(c.outputs.size());
    for (std::size_t i = 0; i < c.outputs.size(); ++i) {
      if (c.in_place.contains(i) || !cpu_out[i].initialized()) continue;
      poison[i] = tensor(cpu_out[i].type(), cpu_out[i].shape());
      if (poison[i].bytes() > 0) std::memset(poison[i].raw(), 0xFF, poison[i].bytes());
      dev.copy(s, gpu_out[i], poison[i]);
    }
    auto [gi, go] = slots(gpu_in, gpu_out);
    // The target's place index is 0 like cpu:0's, so that dropout draws the same mask.
    kernel_context gpu_ctx(c.op, gi, go, a, {target, 0});
    gpu_ctx.bind(&dev, &s);
    const kernel_fn* gpu = kernel_registry::global().find(c.op, target);
    ASSERT_NE(gpu, nullptr);
    for (int call = 0; call < c.calls; ++call) {
      s.enqueue([&] { (*gpu)(gpu_ctx); });
      ASSERT_TRUE(s.synchronize()) << s.error().value_or("(no message)");
    }
    // The outputs are bound once the kernel's host code has run: copy them back now.
    // An in-place output is the input tensor it was bound to.
    const auto result = [&](std::vector<tensor>& ins, std::vector<tensor>& outs, std::size_t i) -> tensor& {
      const auto same = c.in_place.find(i);
      return same == c.in_place.end() ? outs[i] : ins[same->second];
    };
    for (std::size_t i = 0; i < c.outputs.size(); ++i)
      if (result(gpu_in, gpu_out, i).initialized() && !c.shape_only.contains(c.outputs[i]))
        dev.copy(s, back[i], result(gpu_in, gpu_out, i));
    ASSERT_TRUE(s.synchronize()) << s.error().value_or("(no message)");
    for (std::size_t i = 0; i < c.outputs.size(); ++i) {
      SCOPED_TRACE(c.outputs[i]);
      const bool shape_only = c.shape_only.contains(c.outputs[i]);
      if (shape_only) {
        EXPECT_EQ(result(gpu_in, gpu_out, i).shape(), result(cpu_in, cpu_out, i).shape());
        continue;
      }
      ASSERT_TRUE(back[i].initialized());
      EXPECT_TRUE(same(back[i], result(cpu_in, cpu_out, i), false));
    }
  }

  static inline std::map<place::kind, std::unique_ptr<device>> devices_;
  static inline std::string skip_;
};

TEST_P(CudaKernels, Activations) {
  const tensor x = random({33, 65}, -4.f, 4.f, 1), dout = random({33, 65}, -1.f, 1.f, 2);
  for (const auto& [op, as] : std::vector<std::pair<std::string, attrs>>{
           {"relu", {}},
           {"tanh", {}},
           {"sigmoid", {}},
           {"leaky_relu", {{"alpha", 0.1f}}},
           {"gelu", {{"approximate", true}}},
           {"gelu", {{"approximate", false}}}}) {
    expect_match({op, {{"X", x}}, {"Out"}, as});
    const bool reads_out = op == "relu" || op == "tanh" || op == "sigmoid";
    tensor out;
    {
      attribute_map a;
      for (const auto& [n, v] : as) a.set(n, v);
      tensor xi = x.clone();
      kernel_context ctx(op, {{"X", {&xi}}}, {{"Out", {&out}}}, a, place::cpu(0));
      (*kernel_registry::global().find(op, place::kind::cpu))(ctx);
    }
    expect_match({op + "_grad", {{reads_out ? "Out" : "X", reads_out ? out : x}, {"Out@GRAD", dout}},
                  {"X@GRAD"}, as});
  }
  for (const bool after : {true, false})
    expect_match({"scale", {{"X", x}}, {"Out"},
                  {{"scale", 1.5f}, {"bias", 0.25f}, {"bias_after_scale", after}}});
  expect_match({"sum", {{"X", x}, {"X", dout}, {"X", x}}, {"Out"}, {}});
}

TEST_P(CudaKernels, GlobalNormOps) {
  // global_norm_kernels.cu: sqrt and its grad from Out; squared_l2_norm's block reduction
  // over more elements than one block's threads, an empty X, and its grad.
  const tensor x = random({33, 65}, 0.1f, 4.f, 231), dout = random({33, 65}, -1.f, 1.f, 232);
  expect_match({"sqrt", {{"X", x}}, {"Out"}, {}});
  const tensor out = cpu_outputs("sqrt", {{"X", x}}, {"Out"}, {})[0];
  expect_match({"sqrt_grad", {{"Out", out}, {"Out@GRAD", dout}}, {"X@GRAD"}, {}});
  for (const shape_t& dims : {shape_t{33, 65}, shape_t{1}, shape_t{0, 3}}) {
    const tensor v = random(dims, -2.f, 2.f, 233);
    expect_match({"squared_l2_norm", {{"X", v}}, {"Out"}, {}});
    expect_match({"squared_l2_norm_grad", {{"X", v}, {"Out@GRAD", scalar(0.75f)}}, {"X@GRAD"}, {}});
  }
}

TEST_P(CudaKernels, CumsumLanes) {
  // cumsum_kernels.cu: a thread per lane along the first, middle and last axes, exclusive,
  // reverse, flatten (one lane over every element) and in place over X.
  const tensor x = random({5, 67, 9}, -1.f, 1.f, 241);
  for (const std::int32_t axis : {0, 1, -1})
    for (const bool exclusive : {false, true})
      for (const bool reverse : {false, true})
        expect_match({"cumsum", {{"X", x}}, {"Out"},
                      {{"axis", axis}, {"flatten", false}, {"exclusive", exclusive}, {"reverse", reverse}}});
  const attrs flat = {{"axis", std::int32_t{-1}}, {"flatten", true}, {"exclusive", false}, {"reverse", true}};
  expect_match({"cumsum", {{"X", x}}, {"Out"}, flat});
  expect_match({.op = "cumsum", .inputs = {{"X", x}}, .outputs = {"Out"}, .as = flat, .in_place = {{0, 0}}});
  // INT64 and INT32 scan in their type (BERT's position ids: cumsum of ones along the words).
  const attrs last = {{"axis", std::int32_t{-1}}, {"flatten", false}, {"exclusive", false}, {"reverse", false}};
  expect_match({"cumsum", {{"X", labels({16, 8}, 1000, 242)}}, {"Out"}, last});
  std::vector<std::int32_t> small(5 * 7);
  for (std::size_t i = 0; i < small.size(); ++i) small[i] = static_cast<std::int32_t>(i * 37 % 11) - 5;
  expect_match({"cumsum", {{"X", tensor::from_vector(small, {5, 7})}}, {"Out"}, last});
}

TEST_P(CudaKernels, IntegerAddSubMul) {
  // elementwise_add, _sub and _mul on INT64 (Y broadcast) and INT32, in their type.
  const tensor x = labels({6, 8}, 1000, 243), y = labels({8}, 50, 244);
  for (const std::string op : {"elementwise_add", "elementwise_sub", "elementwise_mul"}) {
    expect_match({op, {{"X", x}, {"Y", y}}, {"Out"}, {{"axis", std::int32_t{-1}}}});
    expect_match({op,
                  {{"X", tensor::from_vector<std::int32_t>({1, -2, 3, 40000}, {2, 2})},
                   {"Y", tensor::from_vector<std::int32_t>({7, 50000}, {2})}},
                  {"Out"},
                  {{"axis", std::int32_t{-1}}}});
  }
}

TEST_P(CudaKernels, SliceAndItsGrad) {
  // slice_kernels.cu: a thread per element of the box, FP32 and INT64 words; the grad zeroes
  // Input@GRAD and scatters Out@GRAD into the box.
  using longs = std::vector<std::int64_t>;
  const tensor x = random({9, 8, 33}, -1.f, 1.f, 245);
  struct box {
    std::vector<std::int32_t> axes;
    longs starts, ends;
    std::vector<std::int32_t> decrease;
  };
  for (const box& b : {box{{1}, {0}, {1}, {1}}, box{{0, 2}, {-4, 3}, {100, -5}, {}},
                       box{{2}, {10}, {11}, {}}, box{{0, 1, 2}, {2, 3, 4}, {3, 4, 5}, {0, 1, 2}}}) {
    const attrs as = {{"axes", b.axes}, {"starts", b.starts}, {"ends", b.ends}, {"decrease_axis", b.decrease}};
    expect_match({"slice", {{"Input", x}}, {"Out"}, as});
    tensor out_cpu;
    {
      kernel_context::slot_map in{{"Input", {const_cast<tensor*>(&x)}}}, out{{"Out", {&out_cpu}}};
      attribute_map a;
      for (const auto& [name, value] : as) a.set(name, value);
      kernel_context ctx("slice", in, out, a, place::cpu(0));
      (*kernel_registry::global().find("slice", place::kind::cpu))(ctx);
    }
    expect_match({"slice_grad", {{"Input", x}, {"Out@GRAD", random(out_cpu.shape(), -1.f, 1.f, 246)}},
                  {"Input@GRAD"}, as});
  }
  expect_match({"slice", {{"Input", labels({4, 6}, 100, 247)}}, {"Out"},
                {{"axes", std::vector<std::int32_t>{1}}, {"starts", longs{1}}, {"ends", longs{4}},
                 {"decrease_axis", std::vector<std::int32_t>{}}}});
  // Bounds from tensors on the device (x[-3:, :, 2:7] with the bounds variables), read back
  // by the kernels; the attributes hold placeholders.
  const attrs placeholders = {{"axes", std::vector<std::int32_t>{0, 2}}, {"starts", longs{-1, -1}},
                              {"ends", longs{-1, -1}}, {"decrease_axis", std::vector<std::int32_t>{}}};
  const tensor starts = tensor::from_vector<std::int64_t>({-3, 2}, {2});
  const tensor ends = tensor::from_vector<std::int64_t>({100, 7}, {2});
  expect_match({"slice", {{"Input", x}, {"StartsTensor", starts}, {"EndsTensor", ends}}, {"Out"}, placeholders});
  expect_match({"slice_grad",
                {{"Input", x}, {"Out@GRAD", random({3, 8, 5}, -1.f, 1.f, 248)}, {"StartsTensor", starts},
                 {"EndsTensor", ends}},
                {"Input@GRAD"}, placeholders});
  expect_match({"slice",
                {{"Input", x},
                 {"StartsTensorList", tensor::from_vector<std::int32_t>({4}, {1})},
                 {"StartsTensorList", tensor::from_vector<std::int32_t>({-9}, {1})}},
                {"Out"},
                {{"axes", std::vector<std::int32_t>{0, 2}}, {"starts", longs{-1, -1}}, {"ends", longs{5, 30}},
                 {"decrease_axis", std::vector<std::int32_t>{0}}}});
}

TEST_P(CudaKernels, ElementwiseWithBroadcast) {
  struct shapes {
    shape_t x, y;
    int axis;
  };
  for (const shapes& s : {shapes{{4, 5, 6}, {4, 5, 6}, -1}, shapes{{4, 5, 6}, {6}, -1},
                          shapes{{4, 5, 6}, {5}, 1}, shapes{{4, 5, 6}, {5, 1}, 1},
                          shapes{{64, 300}, {300}, -1}, shapes{{4, 5, 6}, {4}, 0}})
    for (const std::string op : {"elementwise_add", "elementwise_sub", "elementwise_mul",
                                 "elementwise_div", "elementwise_max", "elementwise_min"}) {
      SCOPED_TRACE(to_string(s.x) + " " + to_string(s.y));
      const tensor x = random(s.x, -2.f, 2.f, 3), y = random(s.y, 0.5f, 2.f, 4);
      const tensor dout = random(s.x, -1.f, 1.f, 5);
      const attrs as = {{"axis", std::int32_t{s.axis}}};
      expect_match({op, {{"X", x}, {"Y", y}}, {"Out"}, as});
      named in = {{"X", x}, {"Y", y}, {"Out@GRAD", dout}};
      if (op == "elementwise_div") in.push_back({"Out", random(s.x, -1.f, 1.f, 6)});
      expect_match({op + "_grad", in, {"X@GRAD", "Y@GRAD"}, as});
    }
}

TEST_P(CudaKernels, Gemm) {
  const tensor a = random({8, 3, 5}, -1.f, 1.f, 7), b = random({15, 7}, -1.f, 1.f, 8);
  const attrs mul_as = {{"x_num_col_dims", std::int32_t{1}}, {"y_num_col_dims", std::int32_t{1}}};
  expect_match({"mul", {{"X", a}, {"Y", b}}, {"Out"}, mul_as});
  expect_match({"mul_grad", {{"X", a}, {"Y", b}, {"Out@GRAD", random({8, 7}, -1.f, 1.f, 9)}},
                {"X@GRAD", "Y@GRAD"}, mul_as});
  // A place an uneven split left without rows: Y@GRAD sums over no row (k = 0), zeros.
  const tensor no_rows = random({0, 3, 5}, -1.f, 1.f, 7);
  expect_match({"mul", {{"X", no_rows}, {"Y", b}}, {"Out"}, mul_as});
  expect_match({"mul_grad", {{"X", no_rows}, {"Y", b}, {"Out@GRAD", random({0, 7}, -1.f, 1.f, 9)}},
                {"X@GRAD", "Y@GRAD"}, mul_as});
  struct mm {
    shape_t x, y;
    bool tx, ty;
  };
  for (const mm& m : {mm{{6, 4}, {4, 3}, false, false}, mm{{4, 6}, {4, 3}, true, false},
                      mm{{6, 4}, {3, 4}, false, true}, mm{{4, 6}, {3, 4}, true, true},
                      mm{{2, 6, 4}, {2, 4, 3}, false, false}, mm{{2, 4, 6}, {4, 3}, true, false},
                      mm{{2, 6, 4}, {4, 3}, false, false}}) {
    SCOPED_TRACE(to_string(m.x) + " " + to_string(m.y));
    const tensor x = random(m.x, -1.f, 1.f, 10), y = random(m.y, -1.f, 1.f, 11);
    tensor out;
    const attrs v2 = {{"trans_x", m.tx}, {"trans_y", m.ty}};
    {
      attribute_map at;
      for (const auto& [n, v] : v2) at.set(n, v);
      tensor xi = x.clone(), yi = y.clone();
      kernel_context ctx("matmul_v2", {{"X", {&xi}}, {"Y", {&yi}}}, {{"Out", {&out}}}, at,
                         place::cpu(0));
      (*kernel_registry::global().find("matmul_v2", place::kind::cpu))(ctx);
    }
    const tensor dout = random(out.shape(), -1.f, 1.f, 12);
    expect_match({"matmul_v2", {{"X", x}, {"Y", y}}, {"Out"}, v2});
    expect_match({"matmul_v2_grad", {{"X", x}, {"Y", y}, {"Out@GRAD", dout}}, {"X@GRAD", "Y@GRAD"}, v2});
    const attrs v1 = {{"transpose_X", m.tx}, {"transpose_Y", m.ty}, {"alpha", 0.5f}};
    expect_match({"matmul", {{"X", x}, {"Y", y}}, {"Out"}, v1});
    expect_match({"matmul_grad", {{"X", x}, {"Y", y}, {"Out@GRAD", dout}}, {"X@GRAD", "Y@GRAD"}, v1});
  }
}

TEST_P(CudaKernels, Reductions) {
  const tensor x = random({6, 7, 8}, -1.f, 3.f, 13);
  expect_match({"mean", {{"X", x}}, {"Out"}, {}});
  expect_match({"mean_grad", {{"X", x}, {"Out@GRAD", scalar(0.7f)}}, {"X@GRAD"}, {}});
  using ints = std::vector<std::int32_t>;
  for (const auto& [dim, keep, out_dims] :
       std::vector<std::tuple<ints, bool, shape_t>>{{{1}, false, {6, 8}}, {{0, 2}, true, {1, 7, 1}},
                                                    {{-1}, false, {6, 7}}}) {
    const attrs as = {{"dim", dim}, {"keep_dim", keep}, {"reduce_all", false}};
    expect_match({"reduce_mean", {{"X", x}}, {"Out"}, as});
    expect_match({"reduce_mean_grad", {{"X", x}, {"Out@GRAD", random(out_dims, -1.f, 1.f, 14)}},
                  {"X@GRAD"}, as});
  }
}

TEST_P(CudaKernels, Softmax) {
  const tensor x = random({5, 300, 3}, -5.f, 5.f, 15), dout = random({5, 300, 3}, -1.f, 1.f, 16);
  for (const std::string op : {"softmax", "log_softmax"})
    for (const std::int32_t axis : {-1, 1, 0}) {
      const attrs as = {{"axis", axis}};
      expect_match({op, {{"X", x}}, {"Out"}, as});
      expect_match({op + "_grad", {{"Out", random(x.shape(), 0.f, 1.f, 17)}, {"Out@GRAD", dout}},
                    {"X@GRAD"}, as});
    }
}

TEST_P(CudaKernels, Losses) {
  const std::int64_t rows = 64, classes = 10;
  const tensor logits = random({rows, classes}, -5.f, 5.f, 18);
  tensor hard = labels({rows, 1}, classes, 19);
  hard.data<std::int64_t>()[3] = -100;
  const tensor soft = random({rows, classes}, 0.f, 1.f, 20);
  const tensor probs = random({rows, classes}, 0.01f, 1.f, 21);
  const tensor dloss = random({rows, 1}, 0.5f, 1.5f, 22);
  for (const bool use_softmax : {true, false})
    for (const bool is_soft : {false, true}) {
      const attrs as = {{"axis", std::int32_t{-1}}, {"soft_label", is_soft},
                        {"use_softmax", use_softmax}, {"ignore_index", std::int32_t{-100}},
                        {"numeric_stable_mode", true}};
      const tensor& label = is_soft ? soft : hard;
      expect_match({"softmax_with_cross_entropy", {{"Logits", use_softmax ? logits : probs}, {"Label", label}},
                    {"Softmax", "Loss"}, as});
      expect_match({"softmax_with_cross_entropy_grad",
                    {{"Softmax", probs}, {"Label", label}, {"Loss@GRAD", dloss}}, {"Logits@GRAD"}, as});
    }
  tensor hard2 = labels({rows, 1}, classes, 23);
  for (const bool is_soft : {false, true}) {
    const attrs as = {{"soft_label", is_soft}, {"ignore_index", std::int32_t{-100}}};
    const tensor& label = is_soft ? soft : hard2;
    expect_match({"cross_entropy", {{"X", probs}, {"Label", label}}, {"Y"}, as});
    expect_match({"cross_entropy_grad", {{"X", probs}, {"Label", label}, {"Y@GRAD", dloss}},
                  {"X@GRAD"}, as});
  }
  const attrs as2 = {{"ignore_index", std::int32_t{-100}}};
  expect_match({"cross_entropy2", {{"X", probs}, {"Label", hard}}, {"Y", "MatchX", "XShape"}, as2});
  tensor xshape(dtype::fp32, {rows, classes, 0});
  expect_match({"cross_entropy_grad2",
                {{"XShape", xshape}, {"Label", hard}, {"MatchX", random({rows, 1}, 0.1f, 1.f, 24)},
                 {"Y@GRAD", dloss}},
                {"X@GRAD"}, as2});
}

TEST_P(CudaKernels, TopKAndAccuracy) {
  tensor x = random({16, 12}, -1.f, 1.f, 25);
  for (std::int64_t i = 0; i < x.numel(); i += 5) x.data<float>()[i] = 0.25f; // ties
  expect_match({"top_k", {{"X", x}}, {"Out", "Indices"}, {{"k", std::int32_t{3}}}});
  const attrs v2 = {{"k", std::int32_t{4}}, {"axis", std::int32_t{0}}, {"largest", false},
                    {"sorted", true}};
  expect_match({"top_k_v2", {{"X", x}}, {"Out", "Indices"}, v2});
  tensor idx = labels({16, 3}, 12, 26);
  expect_match({"top_k_grad", {{"X", x}, {"Indices", idx}, {"Out@GRAD", random({16, 3}, -1.f, 1.f, 27)}},
                {"X@GRAD"}, {{"k", std::int32_t{3}}}});
  tensor idx0 = labels({4, 12}, 16, 28);
  expect_match({"top_k_v2_grad",
                {{"X", x}, {"Indices", idx0}, {"Out@GRAD", random({4, 12}, -1.f, 1.f, 29)}},
                {"X@GRAD"}, v2});
  for (const std::int64_t rows : {1, 50, 3000}) {
    tensor ids = labels({rows, 2}, 10, 30);
    expect_match({"accuracy",
                  {{"Out", random({rows, 2}, 0.f, 1.f, 31)}, {"Indices", ids}, {"Label", labels({rows, 1}, 10, 32)}},
                  {"Accuracy", "Correct", "Total"}, {}});
  }
}

TEST_P(CudaKernels, ShapeOps) {
  const tensor x = random({2, 3, 4, 1}, -1.f, 1.f, 33);
  using ints = std::vector<std::int32_t>;
  expect_match({"assign", {{"X", x}}, {"Out"}, {}});
  expect_match({"reshape2", {{"X", x}}, {"Out", "XShape"}, {{"shape", ints{6, -1}}}});
  expect_match({"flatten_contiguous_range", {{"X", x}}, {"Out", "XShape"},
                {{"start_axis", std::int32_t{1}}, {"stop_axis", std::int32_t{-1}}}});
  expect_match({"squeeze2", {{"X", x}}, {"Out", "XShape"}, {{"axes", ints{}}}});
  expect_match({"unsqueeze2", {{"X", x}}, {"Out", "XShape"}, {{"axes", ints{0}}}});
  const tensor xshape(dtype::fp32, {0, 2, 3, 4, 1});
  for (const char* op : {"reshape2_grad", "flatten_contiguous_range_grad", "squeeze2_grad",
                         "unsqueeze2_grad"})
    expect_match({op, {{"Out@GRAD", random({6, 4}, -1.f, 1.f, 34)}, {"XShape", xshape}}, {"X@GRAD"}, {}});
  const attrs tr = {{"axis", ints{3, 1, 0, 2}}};
  expect_match({"transpose2", {{"X", x}}, {"Out", "XShape"}, tr});
  expect_match({"transpose2_grad", {{"Out@GRAD", random({1, 3, 2, 4}, -1.f, 1.f, 35)}, {"XShape", xshape}},
                {"X@GRAD"}, tr});
  const tensor a = random({2, 3, 4}, -1.f, 1.f, 36), b = random({2, 5, 4}, -1.f, 1.f, 37);
  expect_match({"concat", {{"X", a}, {"X", b}}, {"Out"}, {{"axis", std::int32_t{1}}}});
  expect_match({"concat_grad", {{"X", a}, {"X", b}, {"Out@GRAD", random({2, 8, 4}, -1.f, 1.f, 38)}},
                {"X@GRAD", "X@GRAD"}, {{"axis", std::int32_t{1}}}});
  expect_match({"split", {{"X", b}}, {"Out", "Out"},
                {{"axis", std::int32_t{1}}, {"num", std::int32_t{0}}, {"sections", ints{2, -1}}}});
  for (const std::int32_t to : {0, 2, 3, 6})
    expect_match({"cast", {{"X", x}}, {"Out"}, {{"in_dtype", std::int32_t{5}}, {"out_dtype", to}}});
}

TEST_P(CudaKernels, InitAndDropout) {
  const std::vector<std::int64_t> dims = {7, 9};
  for (const std::int32_t type : {5, 3, 2})
    expect_match({"fill_constant", {}, {"Out"},
                  {{"dtype", type}, {"shape", dims}, {"value", 3.f}, {"str_value", std::string()}}});
  expect_match({"uniform_random", {}, {"Out"},
                {{"dtype", std::int32_t{5}}, {"shape", dims}, {"min", -1.f}, {"max", 2.f}, {"seed", std::int32_t{5}}}});
  expect_match({"gaussian_random", {}, {"Out"},
                {{"dtype", std::int32_t{5}}, {"shape", dims}, {"mean", 0.5f}, {"std", 2.f}, {"seed", std::int32_t{6}}}});
  const tensor x = random({31, 17}, -1.f, 1.f, 39);
  for (const bool is_test : {false, true})
    for (const std::string mode : {"upscale_in_train", "downgrade_in_infer"}) {
      const attrs as = {{"dropout_prob", 0.3f}, {"dropout_implementation", mode},
                        {"is_test", is_test}, {"seed", std::int32_t{7}}, {"fix_seed", false}};
      expect_match({"dropout", {{"X", x}}, {"Out", "Mask"}, as});
      tensor mask(dtype::uint8, x.shape());
      for (std::int64_t i = 0; i < mask.numel(); ++i) mask.data<std::uint8_t>()[i] = i % 3 != 0;
      expect_match({"dropout_grad", {{"Out@GRAD", random(x.shape(), -1.f, 1.f, 40)}, {"Mask", mask}},
                    {"X@GRAD"}, as});
    }
}

TEST_P(CudaKernels, Optimizers) {
  const shape_t dims = {37, 11};
  const tensor p = random(dims, -1.f, 1.f, 41), g = random(dims, -1.f, 1.f, 42);
  const tensor v = random(dims, -0.1f, 0.1f, 43), lr = scalar(0.05f);
  expect_match({"sgd", {{"Param", p}, {"Grad", g}, {"LearningRate", lr}}, {"ParamOut"},
                {{"multi_precision", false}}});
  for (const bool nesterov : {false, true})
    expect_match({"momentum", {{"Param", p}, {"Grad", g}, {"Velocity", v}, {"LearningRate", lr}},
                  {"ParamOut", "VelocityOut"},
                  {{"multi_precision", false}, {"mu", 0.9f}, {"use_nesterov", nesterov},
                   {"rescale_grad", 1.f}, {"regularization_method", std::string("l2_decay")},
                   {"regularization_coeff", 0.01f}}});
  const tensor m1 = random(dims, -0.1f, 0.1f, 44), m2 = random(dims, 0.f, 0.1f, 45);
  for (const std::string op : {"adam", "adamw"})
    for (const bool skip : {false, true}) {
      named in = {{"Param", p},           {"Grad", g},  {"Moment1", m1}, {"Moment2", m2},
                  {"LearningRate", lr},   {"Beta1Pow", scalar(0.81f)},  {"Beta2Pow", scalar(0.998f)}};
      if (skip) in.push_back({"SkipUpdate", tensor::from_vector(std::vector<bool>{true}, {1})});
      attrs as = {{"multi_precision", false}, {"beta1", 0.9f}, {"beta2", 0.999f},
                  {"epsilon", 1e-8f}, {"use_global_beta_pow", false}};
      if (op == "adamw") {
        as.push_back({"lr_ratio", 1.f});
        as.push_back({"with_decay", true});
        as.push_back({"coeff", 0.01f});
      }
      expect_match({op, in, {"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"}, as});
    }
}

TEST_P(CudaKernels, PoolConvBatchNorm) {
  using ints = std::vector<std::int32_t>;
  tensor x = random({2, 3, 9, 8}, -1.f, 1.f, 46);
  for (std::int64_t i = 0; i < x.numel(); i += 4) x.data<float>()[i] = 0.5f; // ties for max
  for (const std::string type : {"max", "avg"})
    for (const bool exclusive : {true, false})
      for (const bool ceil_mode : {false, true}) {
        const attrs as = {{"pooling_type", type},      {"ksize", ints{3, 3}},
                          {"strides", ints{2, 2}},     {"paddings", ints{1, 1}},
                          {"exclusive", exclusive},    {"ceil_mode", ceil_mode},
                          {"global_pooling", false},   {"adaptive", false},
                          {"padding_algorithm", std::string("EXPLICIT")},
                          {"data_format", std::string("NCHW")}};
        tensor out;
        {
          attribute_map a;
          for (const auto& [n, v] : as) a.set(n, v);
          tensor xi = x.clone();
          kernel_context ctx("pool2d", {{"X", {&xi}}}, {{"Out", {&out}}}, a, place::cpu(0));
          (*kernel_registry::global().find("pool2d", place::kind::cpu))(ctx);
        }
        expect_match({"pool2d", {{"X", x}}, {"Out"}, as});
        expect_match({"pool2d_grad", {{"X", x}, {"Out", out}, {"Out@GRAD", random(out.shape(), -1.f, 1.f, 47)}},
                      {"X@GRAD"}, as});
      }
  for (const std::int32_t groups : {1, 3}) {
    const std::string op = groups == 3 ? "depthwise_conv2d" : "conv2d";
    const tensor filter = random({6, 3 / groups, 3, 3}, -1.f, 1.f, 48);
    const attrs as = testing::conv_case{op, 3, 6, groups, {1, 2}, {1, 1}, {1, 1}, "EXPLICIT"}.attrs();
    expect_match({op, {{"Input", x}, {"Filter", filter}}, {"Output"}, as});
    expect_match({op + "_grad",
                  {{"Input", x}, {"Filter", filter}, {"Output@GRAD", random({2, 6, 9, 4}, -1.f, 1.f, 49)}},
                  {"Input@GRAD", "Filter@GRAD"}, as});
  }
  const tensor scale = random({3}, 0.5f, 1.5f, 50), bias = random({3}, -1.f, 1.f, 51);
  const tensor mean = random({3}, -0.5f, 0.5f, 52), variance = random({3}, 0.5f, 2.f, 53);
  for (const bool is_test : {false, true}) {
    const attrs as = testing::batch_norm_attrs(is_test);
    expect_match({"batch_norm",
                  {{"X", x}, {"Scale", scale}, {"Bias", bias}, {"Mean", mean}, {"Variance", variance}},
                  {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"}, as});
    expect_match({"batch_norm_grad",
                  {{"X", x}, {"Scale", scale}, {"Bias", bias}, {"Y@GRAD", random(x.shape(), -1.f, 1.f, 54)},
                   {"SavedMean", mean}, {"SavedVariance", random({3}, 0.5f, 2.f, 55)},
                   {"MeanOut", mean}, {"VarianceOut", variance}},
                  {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}, as});
  }
  // Few channels of many terms each (16 x 40 x 40): the GPU splits each channel's sums over
  // several blocks and adds their sums in a second kernel (reduce_blocks_split).
  const tensor long_channels = random({16, 3, 40, 40}, -1.f, 2.f, 57);
  expect_match({"batch_norm",
                {{"X", long_channels}, {"Scale", scale}, {"Bias", bias}, {"Mean", mean}, {"Variance", variance}},
                {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"}, testing::batch_norm_attrs(false)});
  expect_match({"batch_norm_grad",
                {{"X", long_channels}, {"Scale", scale}, {"Bias", bias},
                 {"Y@GRAD", random(long_channels.shape(), -1.f, 1.f, 58)}, {"SavedMean", mean},
                 {"SavedVariance", random({3}, 0.5f, 2.f, 59)}, {"MeanOut", mean}, {"VarianceOut", variance}},
                {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}, testing::batch_norm_attrs(false)});
  // A place an uneven split left without rows: running statistics unchanged, no NaN.
  const tensor no_rows = random({0, 3, 5, 5}, -1.f, 1.f, 56);
  const attrs training = testing::batch_norm_attrs(false);
  expect_match({"batch_norm",
                {{"X", no_rows}, {"Scale", scale}, {"Bias", bias}, {"Mean", mean}, {"Variance", variance}},
                {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"}, training});
  expect_match({"batch_norm_grad",
                {{"X", no_rows}, {"Scale", scale}, {"Bias", bias}, {"Y@GRAD", no_rows}, {"SavedMean", mean},
                 {"SavedVariance", variance}, {"MeanOut", mean}, {"VarianceOut", variance}},
                {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}, training});
}

TEST_P(CudaKernels, ConvThroughCudnn) {
  // The cases of cuDNN's convolution: groups, depthwise (channel multiplier 1 and 2),
  // dilation, strides, symmetric paddings (cuDNN pads) and asymmetric ones, SAME with an odd
  // total padding and VALID (the kernel pads a copy of the input and crops Input@GRAD).
  using testing::conv_case;
  const tensor x = random({2, 4, 9, 8}, -1.f, 1.f, 80);
  for (const conv_case& cc :
       {conv_case{"conv2d", 4, 6, 1, {1, 1}, {1, 1}, {1, 1}, "EXPLICIT"},
        conv_case{"conv2d", 4, 6, 2, {2, 1}, {1, 2}, {1, 1}, "EXPLICIT"},
        conv_case{"conv2d", 4, 5, 1, {1, 2}, {0, 0}, {2, 1}, "EXPLICIT"},
        conv_case{"conv2d", 4, 4, 1, {1, 1}, {0, 2, 1, 0}, {1, 1}, "EXPLICIT"},
        conv_case{"conv2d", 4, 4, 2, {2, 1}, {2, 0, 0, 1}, {2, 2}, "EXPLICIT"},
        conv_case{"conv2d", 4, 3, 1, {1, 1}, {0, 0}, {1, 1}, "SAME"},
        conv_case{"conv2d", 4, 3, 1, {2, 2}, {0, 0}, {1, 1}, "SAME"},
        conv_case{"conv2d", 4, 3, 1, {2, 1}, {3, 3}, {1, 1}, "VALID"},
        conv_case{"depthwise_conv2d", 4, 4, 4, {1, 1}, {1, 1}, {1, 1}, "EXPLICIT"},
        conv_case{"depthwise_conv2d", 4, 8, 4, {1, 2}, {1, 0, 0, 1}, {1, 1}, "EXPLICIT"},
        conv_case{"depthwise_conv2d", 4, 4, 4, {2, 2}, {0, 0}, {1, 1}, "SAME"}}) {
    SCOPED_TRACE(cc.describe());
    // A 3x2 kernel: the two axes pad differently under SAME.
    const tensor filter = random({cc.m, cc.c / cc.groups, 3, 2}, -1.f, 1.f, 81);
    const attrs as = cc.attrs();
    tensor out; // the CPU's Output, for Output@GRAD's dims
    {
      attribute_map a;
      for (const auto& [n, v] : as) a.set(n, v);
      tensor xi = x.clone(), fi = filter.clone();
      kernel_context ctx(cc.op, {{"Input", {&xi}}, {"Filter", {&fi}}}, {{"Output", {&out}}}, a,
                         place::cpu(0));
      (*kernel_registry::global().find(cc.op, place::kind::cpu))(ctx);
    }
    expect_match({cc.op, {{"Input", x}, {"Filter", filter}}, {"Output"}, as});
    expect_match({cc.op + "_grad",
                  {{"Input", x}, {"Filter", filter}, {"Output@GRAD", random(out.shape(), -1.f, 1.f, 82)}},
                  {"Input@GRAD", "Filter@GRAD"}, as});
    // Only one of the grads, as the engine asks when the other is not needed.
    expect_match({cc.op + "_grad",
                  {{"Input", x}, {"Filter", filter}, {"Output@GRAD", random(out.shape(), -1.f, 1.f, 83)}},
                  {"Input@GRAD"}, as});
  }
}

TEST_P(CudaKernels, FiniteCheckFindsWhatTheCpuCheckFinds) {
  // --check-nan-inf's check on the target's stream against the CPU's, on a tensor longer than
  // one pass of the largest grid (65535 blocks of 256 threads), finite and with NaN and
  // infinities planted.
  const place::kind target = GetParam();
  const finite_check_fn* cpu = kernel_registry::global().find_finite_check(place::kind::cpu);
  const finite_check_fn* check = kernel_registry::global().find_finite_check(target);
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(check, nullptr);
  device& dev = *devices_.at(target);
  stream& s = dev.get_stream(stream_kind::compute);
  kernel_context cpu_ctx("check", {}, {}, {}, place::cpu(0));
  kernel_context ctx("check", {}, {}, {}, {target, 0});
  ctx.bind(&dev, &s);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::int64_t n = 17'000'003;
  const tensor finite = random({n}, -1e30f, 1e30f, 21);
  for (const auto& planted : std::vector<std::vector<std::pair<std::int64_t, float>>>{
           {}, {{n - 1, inf}}, {{16'900'000, -inf}, {3, nan}}, {{123'456, nan}}}) {
    tensor host = finite.clone();
    for (const auto& [at, v] : planted) host.data<float>()[at] = v;
    tensor on_target;
    dev.copy(s, on_target, host);
    std::optional<nonfinite_element> got;
    s.enqueue([&] { got = (*check)(ctx, on_target); });
    ASSERT_TRUE(s.synchronize()) << s.error().value_or("(no message)");
    const auto want = (*cpu)(cpu_ctx, host);
    ASSERT_EQ(got.has_value(), want.has_value());
    ASSERT_EQ(want.has_value(), !planted.empty());
    if (!want) continue;
    EXPECT_EQ(got->index, want->index);
    EXPECT_EQ(std::isnan(got->value), std::isnan(want->value));
    if (!std::isnan(want->value)) {
      EXPECT_EQ(got->value, want->value);
    }
  }
}

TEST_P(CudaKernels, InPlaceAsTheEngineBindsThem) {
  const tensor x = random({40, 25}, -2.f, 2.f, 60), y = random({25}, 0.5f, 2.f, 61);
  expect_match({"relu", {{"X", x}}, {"Out"}, {}, {}, {{0, 0}}});
  expect_match({"elementwise_add", {{"X", x}, {"Y", y}}, {"Out"}, {{"axis", std::int32_t{-1}}}, {}, {{0, 0}}});
  expect_match({"sum", {{"X", x}, {"X", x}, {"X", x}}, {"Out"}, {}, {}, {{0, 1}}});
  expect_match({"softmax", {{"X", x}}, {"Out"}, {{"axis", std::int32_t{-1}}}, {}, {{0, 0}}});
  const shape_t dims = {40, 25};
  const tensor p = random(dims, -1.f, 1.f, 62), g = random(dims, -1.f, 1.f, 63), lr = scalar(0.01f);
  expect_match({"sgd", {{"Param", p}, {"Grad", g}, {"LearningRate", lr}}, {"ParamOut"},
                {{"multi_precision", false}}, {}, {{0, 0}}});
  expect_match({"momentum",
                {{"Param", p}, {"Grad", g}, {"Velocity", random(dims, -0.1f, 0.1f, 64)}, {"LearningRate", lr}},
                {"ParamOut", "VelocityOut"},
                {{"multi_precision", false}, {"mu", 0.9f}, {"use_nesterov", false}, {"rescale_grad", 1.f},
                 {"regularization_method", std::string()}, {"regularization_coeff", 0.f}},
                {}, {{0, 0}, {1, 2}}});
  expect_match({"adam",
                {{"Param", p}, {"Grad", g}, {"Moment1", random(dims, -0.1f, 0.1f, 65)},
                 {"Moment2", random(dims, 0.f, 0.1f, 66)}, {"LearningRate", lr},
                 {"Beta1Pow", scalar(0.9f)}, {"Beta2Pow", scalar(0.999f)}},
                {"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"},
                {{"multi_precision", false}, {"beta1", 0.9f}, {"beta2", 0.999f}, {"epsilon", 1e-8f},
                 {"use_global_beta_pow", false}},
                {}, {{0, 0}, {1, 2}, {2, 3}, {3, 5}, {4, 6}}});
  const tensor bx = random({4, 3, 5, 5}, -1.f, 1.f, 67);
  expect_match({"batch_norm",
                {{"X", bx}, {"Scale", random({3}, 0.5f, 1.5f, 68)}, {"Bias", random({3}, -1.f, 1.f, 69)},
                 {"Mean", random({3}, -0.5f, 0.5f, 70)}, {"Variance", random({3}, 0.5f, 2.f, 71)}},
                {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"},
                testing::batch_norm_attrs(false), {}, {{1, 3}, {2, 4}}});
}

// --- The cases below widen the coverage towards the GPU kernels' own code paths: each says
// which branch of kernels/cuda/ it is for. Inputs are chosen so that no compared
// value is a sum cancelling to near zero (summation orders differ between the places).

TEST_P(CudaKernels, PoolWindows) {
  // window_maps.hpp's pool_forward_map / pool_backward_map over the window geometries beyond
  // PoolConvBatchNorm's 3x3 / stride 2 / padding 1. Positive inputs (an average's sum does
  // not cancel), ties planted for max's first_equal. avg's grad gets no Out, as the GPU kernel
  // reads Out only for max (pool_backward's out == nullptr branch).
  using ints = std::vector<std::int32_t>;
  tensor x = random({2, 3, 9, 8}, 0.5f, 1.5f, 90);
  for (std::int64_t i = 0; i < x.numel(); i += 3) x.data<float>()[i] = 1.25f;
  struct pool_case {
    const char* why;
    ints ksize, strides, paddings;
    std::string algorithm;
    bool global, adaptive, ceil_mode;
  };
  for (const pool_case& pc : {
           pool_case{"global_pooling: kernel = the plane, out [1, 1], paddings and strides ignored",
                     {3, 3}, {2, 2}, {1, 1}, "EXPLICIT", true, false, false},
           pool_case{"adaptive with ksize [1, 1]: the global case by the other attribute",
                     {1, 1}, {1, 1}, {0, 0}, "EXPLICIT", false, true, false},
           pool_case{"SAME, stride 2: pads 1 + 1 high, 0 + 1 wide (pad_end > pad_begin: "
                     "paddle_divisor clips at in + pad_begin)",
                     {3, 3}, {2, 2}, {0, 0}, "SAME", false, false, false},
           pool_case{"SAME, stride 1, kernel [2, 3]: pads 0 + 1 high, 1 + 1 wide; paddings ignored",
                     {2, 3}, {1, 1}, {5, 5}, "SAME", false, false, false},
           pool_case{"VALID: no padding, the paddings attribute ignored",
                     {3, 3}, {2, 2}, {2, 2}, "VALID", false, false, false},
           pool_case{"VALID with ceil_mode: the last width window runs past the input (clipped end)",
                     {3, 3}, {2, 2}, {0, 0}, "VALID", false, false, true},
           pool_case{"four paddings (top 0, bottom 2, left 1, right 0)",
                     {3, 3}, {2, 2}, {0, 2, 1, 0}, "EXPLICIT", false, false, false},
           pool_case{"four paddings (top 2, bottom 1, left 0, right 1) with ceil_mode",
                     {3, 3}, {2, 2}, {2, 1, 0, 1}, "EXPLICIT", false, false, true},
           pool_case{"ceil_mode with begin paddings only (top 1, left 1): the last windows end past "
                     "in + pad_end; exclusive divides by 1 element where non-exclusive divides by 2",
                     {3, 2}, {2, 2}, {1, 0, 1, 0}, "EXPLICIT", false, false, true},
           pool_case{"stride 1: overlapping windows, an input in up to 9 (first_cover..last_cover)",
                     {3, 3}, {1, 1}, {1, 1}, "EXPLICIT", false, false, false},
           pool_case{"stride 1, kernel [2, 3], no padding",
                     {2, 3}, {1, 1}, {0, 0}, "EXPLICIT", false, false, false},
           pool_case{"stride 3 > kernel 2: inputs between windows covered by none (zero grad)",
                     {2, 2}, {3, 3}, {0, 0}, "EXPLICIT", false, false, false}}) {
    SCOPED_TRACE(pc.why);
    for (const auto& [type, exclusive] : std::vector<std::pair<std::string, bool>>{
             {"max", true}, {"avg", true}, {"avg", false}}) {
      SCOPED_TRACE(type + (exclusive ? " exclusive" : " non-exclusive"));
      const attrs as = {{"pooling_type", type},          {"ksize", pc.ksize},
                        {"strides", pc.strides},         {"paddings", pc.paddings},
                        {"exclusive", exclusive},        {"ceil_mode", pc.ceil_mode},
                        {"global_pooling", pc.global},   {"adaptive", pc.adaptive},
                        {"padding_algorithm", pc.algorithm},
                        {"data_format", std::string("NCHW")}};
      const tensor out = cpu_outputs("pool2d", {{"X", x}}, {"Out"}, as)[0];
      expect_match({"pool2d", {{"X", x}}, {"Out"}, as});
      const tensor dout = random(out.shape(), 0.5f, 1.5f, 91);
      named in = {{"X", x}, {"Out@GRAD", dout}};
      if (type == "max") in.push_back({"Out", out});
      expect_match({"pool2d_grad", in, {"X@GRAD"}, as});
    }
  }
}

TEST_P(CudaKernels, BatchNormBranches) {
  // batch_norm_kernels.cu's branches beyond PoolConvBatchNorm's NCHW training / inference.
  // No compared sum may cancel: X in [0, 2]; Y@GRAD = 0.5 X + noise in [0.2, 1] (Bias@GRAD
  // positive; in training Scale@GRAD = sum dy * xhat is dominated by 0.5 * count * std); the
  // running Mean in [-1.5, -0.5], below every X, so that under global statistics each term
  // dy * (x - Mean) * inv_std of Scale@GRAD is positive. The grad reads the CPU forward's
  // outputs, as the engine hands them over.
  const tensor scale = random({3}, 0.5f, 1.5f, 100), bias = random({3}, -1.f, 1.f, 101);
  const tensor mean = random({3}, -1.5f, -0.5f, 102), variance = random({3}, 0.5f, 2.f, 103);
  struct bn_case {
    const char* why;
    shape_t dims;
    bool is_test, trainable_statistics, use_global_stats;
  };
  for (const bn_case& bc : {
           bn_case{"use_global_stats in training: normalised with Mean and Variance (global "
                   "bn_stats_map, MeanOut = Mean), grad through bn_inverse_std_map and the global "
                   "bn_backward_map",
                   {4, 3, 5, 5}, false, false, true},
           bn_case{"is_test with trainable_statistics: batch statistics at inference (not global); "
                   "the grad is global (is_test)",
                   {4, 3, 5, 5}, true, true, false},
           bn_case{"rank-2 X [N, C]: spatial 1, the reduce_geometry of one reduced run",
                   {16, 3}, false, false, false},
           bn_case{"rank-2 X [N, C] at inference", {16, 3}, true, false, false},
           bn_case{"rank-3 X [N, C, L]", {4, 3, 7}, false, false, false},
           bn_case{"rank-5 X [N, C, D, H, W]", {2, 3, 2, 3, 2}, false, false, false},
           bn_case{"one element per channel, X [1, C, 1, 1]: the GPU's own per_channel <= 1 "
                   "branch (Y = X copied, saved statistics zero, MeanOut / VarianceOut copied when "
                   "not in place); its grad: X@GRAD = Y@GRAD, zero Scale@GRAD and Bias@GRAD",
                   {1, 3, 1, 1}, false, false, false},
           bn_case{"one element per channel with use_global_stats: the reducing branch, global",
                   {1, 3, 1, 1}, false, false, true},
           bn_case{"one element per channel at inference", {1, 3, 1, 1}, true, false, false}}) {
    SCOPED_TRACE(bc.why);
    const attrs as = testing::batch_norm_attrs(bc.is_test, bc.trainable_statistics, bc.use_global_stats);
    const tensor x = random(bc.dims, 0.f, 2.f, 104);
    const named in = {{"X", x}, {"Scale", scale}, {"Bias", bias}, {"Mean", mean}, {"Variance", variance}};
    const std::vector<std::string> outs = {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"};
    // MeanOut and VarianceOut not in place (their own tensors), then in place as the engine
    // binds them (MeanOut = Mean, VarianceOut = Variance).
    expect_match({"batch_norm", in, outs, as});
    expect_match({"batch_norm", in, outs, as, {}, {{1, 3}, {2, 4}}});
    // Only Y bound: every statistics output is optional on the GPU (channel_output's null).
    expect_match({"batch_norm", in, {"Y"}, as});

    const std::vector<tensor> fwd = cpu_outputs("batch_norm", in, outs, as);
    tensor dy = random(bc.dims, 0.2f, 1.f, 105);
    for (std::int64_t i = 0; i < dy.numel(); ++i) dy.data<float>()[i] += 0.5f * x.data<float>()[i];
    const named grad_in = {{"X", x},          {"Scale", scale},        {"Bias", bias},
                           {"Y@GRAD", dy},    {"SavedMean", fwd[3]},   {"SavedVariance", fwd[4]},
                           {"MeanOut", fwd[1]}, {"VarianceOut", fwd[2]}};
    expect_match({"batch_norm_grad", grad_in, {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}, as});
    // X@GRAD alone (the sums still run), and the parameters' grads alone (no X@GRAD map).
    expect_match({"batch_norm_grad", grad_in, {"X@GRAD"}, as});
    expect_match({"batch_norm_grad", grad_in, {"Scale@GRAD", "Bias@GRAD"}, as});
  }
}

TEST_P(CudaKernels, SyncBatchNormParts) {
  // The ops a synchronised batch_norm is lowered into (graph/sync_batch_norm.hpp), on
  // statistics as the all-reduce leaves them: sums over more rows than this place's, a
  // count of 40 per channel; one channel's count at most one (X passed through); and the
  // long channels that split their sums over several blocks.
  const attrs training = testing::batch_norm_attrs(false);
  const tensor scale = random({3}, 0.5f, 1.5f, 300), bias = random({3}, -1.f, 1.f, 301);
  const tensor mean = random({3}, -0.5f, 0.5f, 302), variance = random({3}, 0.5f, 2.f, 303);
  for (const tensor& x : {random({2, 3, 4, 5}, -1.f, 2.f, 304), random({16, 3, 40, 40}, -1.f, 2.f, 305)}) {
    expect_match({"sync_batch_norm_stats", {{"X", x}, {"Mean", mean}}, {"Stats"}, training});
    const tensor dy = random(x.shape(), -1.f, 1.f, 306);
    const tensor inv_std = random({3}, 0.5f, 2.f, 307);
    expect_match({"sync_batch_norm_grad_stats",
                  {{"X", x}, {"Y@GRAD", dy}, {"SavedMean", mean}, {"SavedVariance", inv_std}},
                  {"Scale@GRAD", "Bias@GRAD", "Stats"}, training});
    for (const float count : {40.f, 1.f}) {
      const tensor stats = tensor::from_vector(std::vector<float>{0.3f, -2.f, 1.5f, 30.f, 45.f, 12.f, count}, {7});
      expect_match({"sync_batch_norm_apply",
                    {{"X", x}, {"Scale", scale}, {"Bias", bias}, {"Mean", mean}, {"Variance", variance},
                     {"Stats", stats}},
                    {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"}, training});
      expect_match({"sync_batch_norm_grad_apply",
                    {{"X", x}, {"Scale", scale}, {"SavedMean", mean}, {"SavedVariance", inv_std},
                     {"Y@GRAD", dy}, {"Stats", stats}},
                    {"X@GRAD"}, training});
    }
  }
}

TEST_P(CudaKernels, LayerNorm) {
  // layer_norm_kernels.cu: a block per row (rows longer than a block of 256 threads too), the
  // optional Scale and Bias and the optional Mean and Variance outputs, Y in place on X, a
  // place without rows, and the grad's outputs together and one by one, with and without
  // Scale and Bias. No compared sum may cancel: X[., j] = j + noise in [-0.1, 0.1], so xhat
  // keeps one sign down each column, and with Y@GRAD in [0.2, 1] so does every term of
  // Scale@GRAD. The grad reads the CPU forward's Mean and Variance, as the engine hands them
  // over.
  struct ln_case {
    const char* why;
    shape_t dims;
    std::int32_t axis;
  };
  for (const ln_case& lc : {ln_case{"X [4, 6, 8], begin_norm_axis 2: 24 rows of 8", {4, 6, 8}, 2},
                            ln_case{"begin_norm_axis 1: 4 rows of 48", {4, 6, 8}, 1},
                            ln_case{"3 rows of 700, longer than a block", {3, 700}, 1},
                            ln_case{"no rows, as an uneven split leaves a place", {0, 6, 8}, 1}}) {
    SCOPED_TRACE(lc.why);
    std::int64_t n = 1;
    for (std::size_t d = static_cast<std::size_t>(lc.axis); d < lc.dims.size(); ++d) n *= lc.dims[d];
    tensor x = random(lc.dims, -0.1f, 0.1f, 120);
    for (std::int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] += static_cast<float>(i % n);
    const tensor scale = random({n}, 0.5f, 1.5f, 121), bias = random({n}, -1.f, 1.f, 122);
    const attrs as = {{"begin_norm_axis", lc.axis}, {"epsilon", 1e-5f}};
    const std::vector<std::string> outs = {"Y", "Mean", "Variance"};
    const named in = {{"X", x}, {"Scale", scale}, {"Bias", bias}};
    expect_match({"layer_norm", in, outs, as});
    expect_match({"layer_norm", {{"X", x}, {"Scale", scale}}, outs, as});
    expect_match({"layer_norm", {{"X", x}}, outs, as});
    expect_match({"layer_norm", in, {"Y"}, as});          // Mean and Variance not bound
    expect_match({"layer_norm", in, outs, as, {}, {{0, 0}}}); // Y in place on X

    const std::vector<tensor> fwd = cpu_outputs("layer_norm", in, outs, as);
    const tensor dy = random(lc.dims, 0.2f, 1.f, 123);
    const named grad_in = {{"X", x}, {"Scale", scale}, {"Bias", bias}, {"Mean", fwd[1]},
                           {"Variance", fwd[2]}, {"Y@GRAD", dy}};
    expect_match({"layer_norm_grad", grad_in, {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}, as});
    expect_match({"layer_norm_grad", grad_in, {"X@GRAD"}, as});
    expect_match({"layer_norm_grad", grad_in, {"Scale@GRAD", "Bias@GRAD"}, as});
    // Without Scale and Bias: Scale counts as 1 in X@GRAD, and the parameters' grads are [N].
    const std::vector<tensor> bare = cpu_outputs("layer_norm", {{"X", x}}, outs, as);
    expect_match({"layer_norm_grad",
                  {{"X", x}, {"Mean", bare[1]}, {"Variance", bare[2]}, {"Y@GRAD", dy}},
                  {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}, as});
  }
}

TEST_P(CudaKernels, LookupTable) {
  // lookup_table_kernels.cu: the gather map and the grad's block per row of W, with INT64 and
  // INT32 ids of rank 1 and 2, padding_idx none, positive and negative (V + p): repeated ids
  // summed in index order (the same FP32 additions as the CPU's, so equal bit for bit), more
  // ids than a block of 256 threads (several chunks of the scan), D wider than the block (a
  // thread strides over the columns), rows no id reads and the padding row zero, and no ids.
  struct lookup_case {
    const char* why;
    shape_t w, ids;
  };
  for (const lookup_case& lc : {lookup_case{"W [7, 5], Ids [6]", {7, 5}, {6}},
                                lookup_case{"W [40, 3], Ids [8, 70]: 560 ids, 3 chunks", {40, 3}, {8, 70}},
                                lookup_case{"W [4, 300]: D wider than a block", {4, 300}, {3, 2}},
                                lookup_case{"no ids, as an uneven split leaves a place", {5, 4}, {0}}}) {
    SCOPED_TRACE(lc.why);
    const tensor w = random(lc.w, -1.f, 1.f, 130);
    const tensor ids = labels(lc.ids, lc.w[0], 131);
    const auto values = ids.values<std::int64_t>();
    const tensor ids32 =
        tensor::from_vector(std::vector<std::int32_t>(values.begin(), values.end()), lc.ids);
    shape_t out_dims = lc.ids;
    out_dims.push_back(lc.w[1]);
    const tensor dout = random(out_dims, -1.f, 1.f, 132);
    for (const int padding_idx : {-1, 2, -3})
      for (const tensor* id : {&ids, &ids32}) {
        SCOPED_TRACE("padding_idx " + std::to_string(padding_idx) +
                     (id == &ids ? ", INT64 ids" : ", INT32 ids"));
        const attrs as = {{"padding_idx", std::int64_t{padding_idx}}, {"is_sparse", false}};
        expect_match({"lookup_table_v2", {{"W", w}, {"Ids", *id}}, {"Out"}, as});
        expect_match({"lookup_table_v2_grad", {{"W", w}, {"Ids", *id}, {"Out@GRAD", dout}},
                      {"W@GRAD"}, as});
      }
  }
}

TEST_P(CudaKernels, DropoutBranches) {
  // init_dropout_kernels.cu's dropout: the mask is drawn on the host (dropout_ops.hpp) and
  // applied on the device; the Seed input is read from device memory (read_scalar), a
  // missing Mask output gets a scratch mask, and a second call through the same context draws
  // the next mask (next_call() = 1) unless fix_seed or Seed fixes it. The grad applies the CPU
  // forward's Mask.
  const tensor x = random({31, 17}, -1.f, 1.f, 110);
  const tensor dout = random(x.shape(), -1.f, 1.f, 111);
  const tensor seed = tensor::from_vector(std::vector<std::int32_t>{11}, {1});
  const auto dropout_as = [](float prob, const std::string& mode, bool is_test, std::int32_t seed_attr,
                             bool fix_seed) -> attrs {
    return {{"dropout_prob", prob}, {"dropout_implementation", mode}, {"is_test", is_test},
            {"seed", seed_attr},    {"fix_seed", fix_seed}};
  };
  for (const std::string mode : {"upscale_in_train", "downgrade_in_infer"}) {
    SCOPED_TRACE(mode);
    // The Seed input (11) overrides the seed attribute (7), on the second call too.
    const attrs seeded = dropout_as(0.3f, mode, false, 7, false);
    expect_match({"dropout", {{"X", x}, {"Seed", seed}}, {"Out", "Mask"}, seeded});
    expect_match({"dropout", {{"X", x}, {"Seed", seed}}, {"Out", "Mask"}, seeded, {}, {}, 2});
    // fix_seed: every call draws the first mask; without it the second call draws another.
    for (const bool fix_seed : {true, false})
      for (const int calls : {1, 2})
        expect_match({"dropout", {{"X", x}}, {"Out", "Mask"}, dropout_as(0.3f, mode, false, 7, fix_seed), {}, {},
                      calls});
    // No Mask output: the GPU applies a scratch mask; a third call's mask.
    expect_match({"dropout", {{"X", x}}, {"Out"}, dropout_as(0.3f, mode, false, 9, false), {}, {}, 3});
    // dropout_prob 0 (keeps all; upscale by 1) and 1 (drops all; keep_prob 0 never divides).
    for (const float prob : {0.f, 1.f})
      for (const bool is_test : {false, true}) {
        SCOPED_TRACE("dropout_prob " + std::to_string(prob) + (is_test ? " is_test" : " training"));
        const attrs as = dropout_as(prob, mode, is_test, 7, true);
        expect_match({"dropout", {{"X", x}}, {"Out", "Mask"}, as});
        const tensor mask = cpu_outputs("dropout", {{"X", x}}, {"Out", "Mask"}, as)[1];
        expect_match({"dropout_grad", {{"Out@GRAD", dout}, {"Mask", mask}}, {"X@GRAD"}, as});
      }
    // The grad of a seeded training forward, with that forward's Mask.
    const tensor mask = cpu_outputs("dropout", {{"X", x}, {"Seed", seed}}, {"Out", "Mask"}, seeded)[1];
    expect_match({"dropout_grad", {{"Out@GRAD", dout}, {"Mask", mask}}, {"X@GRAD"}, seeded});
  }
}

TEST_P(CudaKernels, OptimizerInputs) {
  // optimizer_maps.hpp: momentum_fn's rescale and decay; adam_inputs' device_scalar read from
  // Beta1Tensor / Beta2Tensor / EpsilonTensor (values unlike the attributes, so using the
  // attribute shows), adam_pow_map's keep under use_global_beta_pow or a true SkipUpdate,
  // adam_map's copy under a true SkipUpdate and its update under a false one, adamw's lr_ratio
  // and with_decay = false (coeff then ignored). Each out of place and in place.
  const shape_t dims = {37, 11};
  const tensor p = random(dims, -1.f, 1.f, 120), g = random(dims, -1.f, 1.f, 121);
  const tensor v = random(dims, -0.1f, 0.1f, 122), lr = scalar(0.05f);
  for (const auto& [rescale, method, coeff] : std::vector<std::tuple<float, std::string, float>>{
           {0.5f, "l2_decay", 0.02f}, {2.f, "", 0.f}, {0.25f, "l2_decay", 0.f}})
    for (const bool nesterov : {false, true}) {
      SCOPED_TRACE("momentum rescale_grad " + std::to_string(rescale) + " '" + method + "' " +
                   std::to_string(coeff) + (nesterov ? " nesterov" : ""));
      const attrs as = {{"multi_precision", false}, {"mu", 0.9f}, {"use_nesterov", nesterov},
                        {"rescale_grad", rescale}, {"regularization_method", method},
                        {"regularization_coeff", coeff}};
      const named in = {{"Param", p}, {"Grad", g}, {"Velocity", v}, {"LearningRate", lr}};
      expect_match({"momentum", in, {"ParamOut", "VelocityOut"}, as});
      expect_match({"momentum", in, {"ParamOut", "VelocityOut"}, as, {}, {{0, 0}, {1, 2}}});
    }
  const tensor m1 = random(dims, -0.1f, 0.1f, 123), m2 = random(dims, 0.f, 0.1f, 124);
  struct adam_case {
    const char* why;
    std::string op;
    bool scalar_tensors, global_beta_pow;
    std::optional<bool> skip;
    float lr_ratio;
    bool with_decay;
  };
  for (const adam_case& ac : {
           adam_case{"Beta1Tensor, Beta2Tensor, EpsilonTensor", "adam", true, false, std::nullopt, 1.f, true},
           adam_case{"use_global_beta_pow: the powers kept", "adam", false, true, std::nullopt, 1.f, true},
           adam_case{"SkipUpdate false: updated", "adam", false, false, false, 1.f, true},
           adam_case{"SkipUpdate true with the tensors and global powers", "adam", true, true, true, 1.f, true},
           adam_case{"adamw lr_ratio 0.5", "adamw", false, false, std::nullopt, 0.5f, true},
           adam_case{"adamw with_decay false (coeff ignored)", "adamw", false, false, std::nullopt, 1.f, false},
           adam_case{"adamw lr_ratio 0.25, no decay, the tensors, SkipUpdate false", "adamw", true, false, false,
                     0.25f, false},
           adam_case{"adamw SkipUpdate true", "adamw", false, false, true, 0.5f, true}}) {
    SCOPED_TRACE(ac.op + ": " + ac.why);
    named in = {{"Param", p},         {"Grad", g},                  {"Moment1", m1},
                {"Moment2", m2},      {"LearningRate", lr},         {"Beta1Pow", scalar(0.81f)},
                {"Beta2Pow", scalar(0.998f)}};
    if (ac.scalar_tensors) {
      in.push_back({"Beta1Tensor", scalar(0.8f)});
      in.push_back({"Beta2Tensor", scalar(0.99f)});
      in.push_back({"EpsilonTensor", scalar(1e-4f)});
    }
    if (ac.skip) in.push_back({"SkipUpdate", tensor::from_vector(std::vector<bool>{*ac.skip}, {1})});
    attrs as = {{"multi_precision", false}, {"beta1", 0.9f}, {"beta2", 0.999f}, {"epsilon", 1e-8f},
                {"use_global_beta_pow", ac.global_beta_pow}};
    if (ac.op == "adamw") {
      as.push_back({"lr_ratio", ac.lr_ratio});
      as.push_back({"with_decay", ac.with_decay});
      as.push_back({"coeff", 0.3f});
    }
    const std::vector<std::string> outs = {"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"};
    expect_match({ac.op, in, outs, as});
    expect_match({ac.op, in, outs, as, {}, {{0, 0}, {1, 2}, {2, 3}, {3, 5}, {4, 6}}});
  }
}

TEST_P(CudaKernels, CastTypes) {
  // shape_kernels.cu's cast: cast_fn for each (from, to) pair visit_element_type instantiates.
  // Values are in range for every target (out-of-range conversions are undefined behaviour in
  // C++ and differ between host and device: never tested).
  const std::int32_t fp32 = 5, fp64 = 6, int64 = 3, int32 = 2, boolean = 0, uint8 = 20;
  const auto cast = [&](const tensor& x, std::int32_t from, std::int32_t to) {
    SCOPED_TRACE("cast " + std::to_string(from) + " -> " + std::to_string(to));
    expect_match({"cast", {{"X", x}}, {"Out"}, {{"in_dtype", from}, {"out_dtype", to}}});
  };
  // FP32 with fractions (truncated toward zero), exact integers, zeros of both signs.
  tensor f = random({5, 13}, -100.f, 100.f, 130);
  for (const auto& [i, value] : std::vector<std::pair<int, float>>{{0, 0.f}, {1, -0.f}, {2, 1.f}, {3, -1.f},
                                                                   {4, 0.5f}, {5, -0.5f}, {6, 99.99f}})
    f.data<float>()[i] = value;
  for (const std::int32_t to : {int64, int32, boolean, fp64, fp32}) cast(f, fp32, to);
  cast(random({5, 13}, 0.f, 255.f, 131), fp32, uint8);
  // INT64: values FP32 rounds (beyond 2^24, 2^53), all in INT32's range where cast to it.
  const tensor big = tensor::from_vector(
      std::vector<std::int64_t>{0, 1, -1, 16777217, -16777219, 123456789012LL, -(std::int64_t{1} << 40) - 1,
                                9007199254740993LL},
      {2, 4});
  for (const std::int32_t to : {fp32, fp64, boolean}) cast(big, int64, to);
  const tensor small = tensor::from_vector(std::vector<std::int64_t>{0, 1, 7, 200, 255, 3, 42, 128}, {8});
  for (const std::int32_t to : {int32, uint8, fp32}) cast(small, int64, to);
  const tensor i32 = tensor::from_vector(
      std::vector<std::int32_t>{0, -1, 2147483647, -2147483647 - 1, 16777217, 33554435, 100, -7}, {4, 2});
  for (const std::int32_t to : {fp32, fp64, int64, boolean}) cast(i32, int32, to);
  cast(tensor::from_vector(std::vector<std::int32_t>{0, 1, 254, 255}, {4}), int32, uint8);
  const tensor flags = tensor::from_vector(std::vector<bool>{true, false, false, true, true, false}, {2, 3});
  for (const std::int32_t to : {fp32, fp64, int64, int32, uint8, boolean}) cast(flags, boolean, to);
  // FP64: values FP32 rounds (to nearest), in its range.
  const tensor f64 = tensor::from_vector(
      std::vector<double>{0.1, 1.0 / 3, -2.5e-5, 1e30, -3.4e38, 16777217.0, 0.0, -123.75}, {8});
  for (const std::int32_t to : {fp32, boolean}) cast(f64, fp64, to);
  cast(tensor::from_vector(std::vector<double>{0.1, -1.5, 1e9, -2e9, 2147483647.0, 99.9}, {6}), fp64, int64);
  cast(tensor::from_vector(std::vector<double>{0.1, -1.5, 1e9, -2e9, 2147483647.0, 99.9}, {6}), fp64, int32);
  const tensor bytes = tensor::from_vector(std::vector<std::uint8_t>{0, 1, 127, 128, 254, 255}, {6});
  for (const std::int32_t to : {fp32, int64, int32, boolean, fp64}) cast(bytes, uint8, to);
}

TEST_P(CudaKernels, TransposeRanksAndWords) {
  // permute_index.hpp's permute_map on 8-byte words (INT64, visit_transpose_word's uint64_t)
  // and 4-byte ones, rank 1 (the identity), 5 and 6 (up to the kernel's max_rank of 8).
  using ints = std::vector<std::int32_t>;
  struct tr_case {
    shape_t dims;
    ints perm;
  };
  for (const tr_case& tc : {tr_case{{7}, {0}}, tr_case{{2, 3, 1, 4, 2}, {4, 2, 0, 3, 1}},
                            tr_case{{2, 1, 3, 2, 2, 3}, {5, 0, 3, 1, 4, 2}},
                            tr_case{{3, 4, 5, 2, 2, 2}, {1, 0, 2, 5, 4, 3}}}) {
    SCOPED_TRACE(to_string(tc.dims));
    shape_t out_dims, xshape = {0};
    for (const std::int32_t a : tc.perm) out_dims.push_back(tc.dims[static_cast<std::size_t>(a)]);
    xshape.insert(xshape.end(), tc.dims.begin(), tc.dims.end());
    const attrs as = {{"axis", tc.perm}};
    const tensor xs(dtype::fp32, xshape);
    for (const tensor& x : {labels(tc.dims, 1'000'000'000'000LL, 140), random(tc.dims, -1.f, 1.f, 141)}) {
      SCOPED_TRACE(to_string(x.type()));
      expect_match({"transpose2", {{"X", x}}, {"Out", "XShape"}, as});
      const tensor dout = x.type() == dtype::int64 ? labels(out_dims, 1'000'000'000'000LL, 142)
                                                   : random(out_dims, -1.f, 1.f, 143);
      expect_match({"transpose2_grad", {{"Out@GRAD", dout}, {"XShape", xs}}, {"X@GRAD"}, as});
    }
  }
}

TEST_P(CudaKernels, ConcatSplitAxesAndWords) {
  // shape_kernels.cu's copy_blocks (one cudaMemcpy2DAsync per part) on 8-byte INT64 rows and
  // FP32: axis 0 (outer 1: one row per part), axis -1 (the narrowest blocks), three parts and
  // an empty one (width 0, skipped), split by num and by sections (with -1 and 0).
  using ints = std::vector<std::int32_t>;
  const auto ids = [](const shape_t& dims, unsigned seed) { return labels(dims, 1'000'000'000'000LL, seed); };
  expect_match({"concat", {{"X", ids({2, 3, 4}, 150)}, {"X", ids({1, 3, 4}, 151)}, {"X", ids({3, 3, 4}, 152)}},
                {"Out"}, {{"axis", std::int32_t{0}}}});
  expect_match({"concat",
                {{"X", ids({2, 3, 1}, 153)}, {"X", ids({2, 3, 4}, 154)}, {"X", ids({2, 3, 0}, 155)},
                 {"X", ids({2, 3, 2}, 156)}},
                {"Out"}, {{"axis", std::int32_t{-1}}}});
  const tensor a = random({2, 3, 1}, -1.f, 1.f, 157), b = random({2, 3, 4}, -1.f, 1.f, 158),
               c = random({2, 3, 2}, -1.f, 1.f, 159);
  expect_match({"concat", {{"X", a}, {"X", b}, {"X", c}}, {"Out"}, {{"axis", std::int32_t{-1}}}});
  expect_match({"concat_grad", {{"X", a}, {"X", b}, {"X", c}, {"Out@GRAD", random({2, 3, 7}, -1.f, 1.f, 160)}},
                {"X@GRAD", "X@GRAD", "X@GRAD"}, {{"axis", std::int32_t{-1}}}});
  expect_match({"concat_grad",
                {{"X", random({2, 3}, -1.f, 1.f, 161)}, {"X", random({4, 3}, -1.f, 1.f, 162)},
                 {"X", random({1, 3}, -1.f, 1.f, 163)}, {"Out@GRAD", random({7, 3}, -1.f, 1.f, 164)}},
                {"X@GRAD", "X@GRAD", "X@GRAD"}, {{"axis", std::int32_t{0}}}});
  struct split_case {
    shape_t dims;
    std::int32_t axis, num;
    ints sections;
  };
  for (const split_case& sc : {split_case{{2, 3, 6}, -1, 3, {}}, split_case{{6, 3, 2}, 0, 3, {}},
                               split_case{{5, 3, 2}, 0, 0, {1, -1, 2}}, split_case{{2, 5, 3}, 1, 0, {2, 0, -1}},
                               split_case{{2, 3, 5}, -1, 0, {-1, 1, 1}}})
    for (const tensor& x : {ids(sc.dims, 165), random(sc.dims, -1.f, 1.f, 166)}) {
      SCOPED_TRACE(to_string(x.type()) + " " + to_string(sc.dims) + " axis " + std::to_string(sc.axis));
      expect_match({"split", {{"X", x}}, {"Out", "Out", "Out"},
                    {{"axis", sc.axis}, {"num", sc.num}, {"sections", sc.sections}}});
    }
}

TEST_P(CudaKernels, ElementwiseGeometriesAndGradSlots) {
  // broadcast_maps.hpp over reduce_geometry.hpp's shapes beyond ElementwiseWithBroadcast's:
  // Y [1] (no kept axis: Y@GRAD one block over every element), an explicit axis != -1, Y's
  // trailing 1s and X's extent-1 axes dropped; and elementwise_backward with only X@GRAD or
  // only Y@GRAD bound. Positive inputs: Y@GRAD's sums do not cancel.
  struct shapes {
    shape_t x, y;
    int axis;
  };
  for (const shapes& s : {shapes{{4, 5, 6}, {1}, -1}, shapes{{4, 5, 6}, {1}, 0}, shapes{{4, 5, 6}, {5, 6}, 1},
                          shapes{{4, 5, 6}, {4, 5}, 0}, shapes{{2, 3, 4, 5}, {3, 1}, 1},
                          shapes{{3, 1, 4}, {1, 4}, 1}, shapes{{3, 1, 4}, {3, 1, 4}, -1}})
    for (const std::string op : {"elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
                                 "elementwise_max", "elementwise_min", "elementwise_pow"}) {
      SCOPED_TRACE(op + " X " + to_string(s.x) + " Y " + to_string(s.y) + " axis " + std::to_string(s.axis));
      const tensor x = random(s.x, 0.5f, 2.f, 170), y = random(s.y, 0.5f, 2.f, 171);
      const attrs as = {{"axis", std::int32_t{s.axis}}};
      expect_match({op, {{"X", x}, {"Y", y}}, {"Out"}, as});
      named in = {{"X", x}, {"Y", y}, {"Out@GRAD", random(s.x, 0.5f, 1.5f, 172)}};
      if (op == "elementwise_div") in.push_back({"Out", cpu_outputs(op, {{"X", x}, {"Y", y}}, {"Out"}, as)[0]});
      expect_match({op + "_grad", in, {"X@GRAD", "Y@GRAD"}, as});
      expect_match({op + "_grad", in, {"X@GRAD"}, as});
      expect_match({op + "_grad", in, {"Y@GRAD"}, as});
    }
}

TEST_P(CudaKernels, ReduceMeanAxes) {
  // reduce_kernels.cu's average_plan / broadcast_scaled_map over reduce_all, keep_dim and
  // negative dims, alternating kept and reduced runs, and X's extent-1 axes (dropped by
  // reduce_geometry), for reduce_mean (scale 1 / count) and reduce_sum (dim as LONGS, scale
  // 1). Positive X: the averages do not cancel.
  using ints = std::vector<std::int32_t>;
  for (const auto& [dims, dim, keep, all] : std::vector<std::tuple<shape_t, ints, bool, bool>>{
           {{6, 7, 8}, {0}, false, true},   // reduce_all: dim ignored, Out [1]
           {{6, 7, 8}, {1}, true, true},    // reduce_all with keep_dim: Out [1, 1, 1]
           {{6, 7, 8}, {-1, -3}, true, false},
           {{6, 7, 8}, {-2}, false, false},
           {{6, 7, 8}, {-3}, true, false},
           {{2, 3, 4, 5}, {0, 2}, false, false}, // kept, reduced, kept, reduced, ... runs
           {{2, 3, 4, 5}, {1, 3}, true, false},
           {{6, 1, 8}, {1}, false, false},  // reducing an extent-1 axis: a copy
           {{6, 1, 8}, {0, -1}, true, false}}) {
    SCOPED_TRACE(to_string(dims) + " dim " + to_string(std::vector<std::int64_t>(dim.begin(), dim.end())) +
                 (keep ? " keep_dim" : "") + (all ? " reduce_all" : ""));
    const tensor x = random(dims, 0.5f, 3.f, 180);
    const attrs as = {{"dim", dim}, {"keep_dim", keep}, {"reduce_all", all}};
    expect_match({"reduce_mean", {{"X", x}}, {"Out"}, as});
    const tensor out = cpu_outputs("reduce_mean", {{"X", x}}, {"Out"}, as)[0];
    expect_match({"reduce_mean_grad", {{"X", x}, {"Out@GRAD", random(out.shape(), -1.f, 1.f, 181)}},
                  {"X@GRAD"}, as});
    const attrs sum_as = {{"dim", std::vector<std::int64_t>(dim.begin(), dim.end())},
                          {"keep_dim", keep},
                          {"reduce_all", all},
                          {"in_dtype", std::int32_t{-1}},
                          {"out_dtype", std::int32_t{5}}};
    expect_match({"reduce_sum", {{"X", x}}, {"Out"}, sum_as});
    expect_match({"reduce_sum_grad", {{"X", x}, {"Out@GRAD", random(out.shape(), -1.f, 1.f, 182)}},
                  {"X@GRAD"}, sum_as});
  }
}

TEST_P(CudaKernels, LanesBeyondOneGrid) {
  // More lanes than one grid has blocks (65535): the lane loops of softmax_kernel,
  // softmax_grad_kernel and softmax_xent_kernel stride by gridDim.x; along axis 0 the same
  // tensor is 3 lanes of 70000 elements (long strided folds).
  const std::int64_t rows = 70'000, classes = 3;
  const tensor x = random({rows, classes}, -5.f, 5.f, 190), dout = random({rows, classes}, -1.f, 1.f, 191);
  for (const std::string op : {"softmax", "log_softmax"})
    for (const std::int32_t axis : {-1, 0}) {
      SCOPED_TRACE(op + " axis " + std::to_string(axis));
      const attrs as = {{"axis", axis}};
      expect_match({op, {{"X", x}}, {"Out"}, as});
      const tensor out = cpu_outputs(op, {{"X", x}}, {"Out"}, as)[0];
      expect_match({op + "_grad", {{"Out", out}, {"Out@GRAD", dout}}, {"X@GRAD"}, as});
    }
  tensor hard = labels({rows, 1}, classes, 192);
  hard.data<std::int64_t>()[rows - 1] = -100; // the grid-stride loop's last row is ignored
  const tensor soft = random({rows, classes}, 0.f, 1.f, 193);
  const tensor dloss = random({rows, 1}, 0.5f, 1.5f, 194);
  for (const bool is_soft : {false, true}) {
    SCOPED_TRACE(is_soft ? "soft labels" : "hard labels");
    const attrs as = {{"axis", std::int32_t{-1}}, {"soft_label", is_soft}, {"use_softmax", true},
                      {"ignore_index", std::int32_t{-100}}, {"numeric_stable_mode", true}};
    const tensor& label = is_soft ? soft : hard;
    expect_match({"softmax_with_cross_entropy", {{"Logits", x}, {"Label", label}}, {"Softmax", "Loss"}, as});
    const tensor sm = cpu_outputs("softmax_with_cross_entropy", {{"Logits", x}, {"Label", label}},
                                  {"Softmax", "Loss"}, as)[0];
    expect_match({"softmax_with_cross_entropy_grad", {{"Softmax", sm}, {"Label", label}, {"Loss@GRAD", dloss}},
                  {"Logits@GRAD"}, as});
  }
}

TEST_P(CudaKernels, TopKLanes) {
  // loss_plans.hpp's top_k_map: k = n (every element inserted, the shifting loop over all),
  // and top_k_v2 on a middle axis (lanes `inner` apart: l.first(lane, k) and the step), both
  // orders, with ties (earlier index first). The grads scatter with the CPU forward's Indices.
  tensor x = random({16, 12}, -1.f, 1.f, 200);
  for (std::int64_t i = 0; i < x.numel(); i += 5) x.data<float>()[i] = 0.25f;
  const attrs k_all = {{"k", std::int32_t{12}}};
  expect_match({"top_k", {{"X", x}}, {"Out", "Indices"}, k_all});
  const tensor idx = cpu_outputs("top_k", {{"X", x}}, {"Out", "Indices"}, k_all)[1];
  expect_match({"top_k_grad", {{"X", x}, {"Indices", idx}, {"Out@GRAD", random({16, 12}, -1.f, 1.f, 201)}},
                {"X@GRAD"}, k_all});
  tensor x3 = random({4, 12, 5}, -1.f, 1.f, 202);
  for (std::int64_t i = 0; i < x3.numel(); i += 7) x3.data<float>()[i] = -0.5f;
  for (const auto& [axis, k] : std::vector<std::pair<std::int32_t, std::int32_t>>{
           {1, 3}, {1, 12}, {-2, 5}, {0, 4}, {0, 2}, {2, 5}})
    for (const bool largest : {false, true}) {
      SCOPED_TRACE("top_k_v2 axis " + std::to_string(axis) + " k " + std::to_string(k) +
                   (largest ? " largest" : " smallest"));
      const attrs as = {{"k", k}, {"axis", axis}, {"largest", largest}, {"sorted", true}};
      expect_match({"top_k_v2", {{"X", x3}}, {"Out", "Indices"}, as});
      const std::vector<tensor> fwd = cpu_outputs("top_k_v2", {{"X", x3}}, {"Out", "Indices"}, as);
      expect_match({"top_k_v2_grad",
                    {{"X", x3}, {"Indices", fwd[1]}, {"Out@GRAD", random(fwd[0].shape(), -1.f, 1.f, 203)}},
                    {"X@GRAD"}, as});
    }
}

TEST_P(CudaKernels, GemmBatchesAndFlattening) {
  // gemm_kernels.cu over rank-4 batches: equal batch dims (cublasSgemmStridedBatched), a
  // rank-2 Y shared by every batch entry (the only batch broadcast matmul_v2 accepts:
  // untransposed X is one GEMM over the stacked rows; transposed X a strided batch with Y
  // stride 0, whose Y@GRAD sums the batch in the c_stride == 0 loop), and mul flattening at
  // x_num_col_dims 2 and 3. K <= 20 and positive inputs: no cancelling sums.
  struct mm {
    shape_t x, y;
    bool tx, ty;
  };
  for (const mm& m : {mm{{2, 3, 4, 5}, {2, 3, 5, 6}, false, false}, mm{{2, 3, 5, 4}, {2, 3, 6, 5}, true, true},
                      mm{{2, 3, 4, 5}, {5, 6}, false, false}, mm{{2, 3, 4, 5}, {6, 5}, false, true},
                      mm{{2, 3, 5, 4}, {5, 6}, true, false}, mm{{2, 3, 5, 4}, {6, 5}, true, true}}) {
    SCOPED_TRACE(to_string(m.x) + (m.tx ? "^T" : "") + " x " + to_string(m.y) + (m.ty ? "^T" : ""));
    const tensor x = random(m.x, 0.1f, 1.f, 210), y = random(m.y, 0.1f, 1.f, 211);
    const attrs v2 = {{"trans_x", m.tx}, {"trans_y", m.ty}};
    const attrs v1 = {{"transpose_X", m.tx}, {"transpose_Y", m.ty}, {"alpha", 0.5f}};
    const tensor out = cpu_outputs("matmul_v2", {{"X", x}, {"Y", y}}, {"Out"}, v2)[0];
    const tensor dout = random(out.shape(), 0.1f, 1.f, 212);
    for (const auto& [op, as] : std::vector<std::pair<std::string, attrs>>{{"matmul_v2", v2}, {"matmul", v1}}) {
      expect_match({op, {{"X", x}, {"Y", y}}, {"Out"}, as});
      expect_match({op + "_grad", {{"X", x}, {"Y", y}, {"Out@GRAD", dout}}, {"X@GRAD", "Y@GRAD"}, as});
      expect_match({op + "_grad", {{"X", x}, {"Y", y}, {"Out@GRAD", dout}}, {"Y@GRAD"}, as});
    }
  }
  for (const auto& [xd, yd, xn, yn] : std::vector<std::tuple<shape_t, shape_t, std::int32_t, std::int32_t>>{
           {{2, 3, 4, 5}, {4, 5, 7}, 2, 2}, {{2, 3, 4, 5}, {5, 7}, 3, 1}, {{2, 3, 4, 5}, {20, 7}, 2, 1}}) {
    SCOPED_TRACE("mul " + to_string(xd) + " at " + std::to_string(xn) + ", " + to_string(yd) + " at " +
                 std::to_string(yn));
    const tensor x = random(xd, 0.1f, 1.f, 213), y = random(yd, 0.1f, 1.f, 214);
    const attrs as = {{"x_num_col_dims", xn}, {"y_num_col_dims", yn}};
    const tensor out = cpu_outputs("mul", {{"X", x}, {"Y", y}}, {"Out"}, as)[0];
    expect_match({"mul", {{"X", x}, {"Y", y}}, {"Out"}, as});
    expect_match({"mul_grad", {{"X", x}, {"Y", y}, {"Out@GRAD", random(out.shape(), 0.1f, 1.f, 215)}},
                  {"X@GRAD", "Y@GRAD"}, as});
  }
}

TEST_P(CudaKernels, ConditionOps) {
  // condition_kernels.cu: BOOL out of FP32, INT64 and INT32 operands, the small operand
  // broadcast from either side (a 0-D Y as Paddle's schedules compare, X of lower rank).
  const tensor a = random({4, 5, 6}, -2.f, 2.f, 251), b = random({5, 6}, -2.f, 2.f, 252);
  const tensor steps = tensor::from_vector<std::int64_t>({0, 3, 5, 9, 5, -1}, {6});
  const tensor five = tensor::from_vector<std::int64_t>({5}, {});
  const tensor ints = tensor::from_vector<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  const tensor col = tensor::from_vector<std::int32_t>({2, 5}, {2});
  for (const std::string op : {"less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal"}) {
    const attrs last = {{"axis", std::int32_t{-1}}};
    expect_match({op, {{"X", a}, {"Y", b}}, {"Out"}, last});
    expect_match({op, {{"X", b}, {"Y", a}}, {"Out"}, last});
    expect_match({op, {{"X", a}, {"Y", a}}, {"Out"}, last});
    expect_match({op, {{"X", steps}, {"Y", five}}, {"Out"}, last});
    expect_match({op, {{"X", ints}, {"Y", col}}, {"Out"}, {{"axis", std::int32_t{0}}}});
  }
  const tensor p = tensor::from_vector<bool>({true, true, false, false, true, false}, {6});
  const tensor q = tensor::from_vector<bool>({true, false, true, false, false, false}, {6});
  for (const std::string op : {"logical_and", "logical_or", "logical_xor"})
    expect_match({op, {{"X", p}, {"Y", q}}, {"Out"}, {{"axis", std::int32_t{-1}}}});
  expect_match({"logical_not", {{"X", p}}, {"Out"}, {}});
  expect_match({"logical_not", {{"X", a}}, {"Out"}, {}});
}

TEST_P(CudaKernels, ControlFlowOps) {
  // control_flow_kernels.cu: increment in each dtype and in place, select_input by a Mask read
  // back from the place, and conditional_block's Cond read back (the sub-block runs, or not,
  // as on the CPU).
  expect_match({"increment", {{"X", tensor::from_vector<std::int64_t>({-1}, {1})}}, {"Out"}, {{"step", 1.f}}});
  expect_match({.op = "increment", .inputs = {{"X", tensor::from_vector<std::int32_t>({7}, {1})}}, .outputs = {"Out"},
                .as = {{"step", 2.f}}, .in_place = {{0, 0}}});
  expect_match({"increment", {{"X", scalar(1.5f)}}, {"Out"}, {{"step", 0.25f}}});
  const tensor x0 = random({3, 4}, -1.f, 1.f, 253), x1 = random({3, 4}, -1.f, 1.f, 254);
  for (const std::int32_t k : {0, 1})
    expect_match({"select_input", {{"X", x0}, {"X", x1}, {"Mask", tensor::from_vector<std::int32_t>({k}, {1})}}, {"Out"}, {}});
  for (const bool holds : {true, false}) {
    const place::kind target = GetParam();
    device& dev = *devices_.at(target);
    stream& s = dev.get_stream(stream_kind::compute);
    const tensor host = tensor::from_vector<bool>({holds}, {1}); // outlives the copy
    tensor cond;
    dev.copy(s, cond, host);
    ASSERT_TRUE(s.synchronize());
    attribute_map a;
    a.set("is_scalar_condition", true);
    kernel_context ctx("conditional_block", {{"Cond", {&cond}}}, {}, a, {target, 0});
    ctx.bind(&dev, &s);
    int runs = 0;
    ctx.set_sub_block([&runs] { ++runs; });
    s.enqueue([&] { (*kernel_registry::global().find("conditional_block", target))(ctx); });
    ASSERT_TRUE(s.synchronize()) << s.error().value_or("(no message)");
    EXPECT_EQ(runs, holds ? 1 : 0) << "Cond " << holds;
  }
}

TEST_P(CudaKernels, FillConstantValues) {
  // init_dropout_kernels.cu's fill_with: str_value parsed by fill_value (exact INT64 beyond
  // 2^53, FP32 through double, infinities), a rank-0 shape [] (one element) and an empty one.
  const std::int32_t fp32 = 5, int64 = 3, int32 = 2;
  for (const auto& [type, text] : std::vector<std::pair<std::int32_t, std::string>>{
           {fp32, "0.1"}, {fp32, "-1e-3"}, {fp32, "inf"}, {fp32, "-inf"}, {fp32, "3.4e38"},
           {int64, "9007199254740993"}, {int64, "-42"}, {int64, "-9223372036854775807"},
           {int32, "-7"}, {int32, "2147483647"}, {int64, "-1.0"}, {0, "1.0"}, {0, "0.0"}})
    for (const shape_t& dims : {shape_t{5, 3}, shape_t{}}) {
      SCOPED_TRACE("dtype " + std::to_string(type) + " str_value '" + text + "' shape " + to_string(dims));
      expect_match({"fill_constant", {}, {"Out"},
                    {{"dtype", type}, {"shape", std::vector<std::int64_t>(dims.begin(), dims.end())},
                     {"value", 3.f}, {"str_value", text}}});
    }
  for (const std::int32_t type : {fp32, int64, int32})
    for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{}, std::vector<std::int64_t>{0, 4}}) {
      SCOPED_TRACE("dtype " + std::to_string(type) + " shape of rank " + std::to_string(dims.size()));
      expect_match({"fill_constant", {}, {"Out"},
                    {{"dtype", type}, {"shape", dims}, {"value", -2.f}, {"str_value", std::string()}}});
    }
}

TEST_P(CudaKernels, FillAnyLikeValues) {
  // init_dropout_kernels.cu's fill_any_like: X's dims (of either dtype; its values unread),
  // dtype -1 (X's) or each dtype the engine runs, the value converted as Paddle's
  // static_cast (1.5 and -2.5 truncated for the integers, 0.5 true for BOOL).
  const std::int32_t as_x = -1, fp32 = 5, int64 = 3, int32 = 2, uint8 = 20, boolean = 0;
  const tensor x = random({7, 9}, -1.f, 1.f, 216), ids = labels({5, 1}, 10, 217);
  for (const tensor& in : {x, ids})
    for (const auto& [type, value] : std::vector<std::pair<std::int32_t, float>>{
             {as_x, 1.5f}, {as_x, -2.5f}, {fp32, 0.25f}, {int64, 1.5f}, {int64, -2.5f},
             {int32, -7.9f}, {uint8, 255.f}, {uint8, 0.f}, {boolean, 0.5f}, {boolean, 0.f}}) {
      SCOPED_TRACE(to_string(in.type()) + " X, dtype " + std::to_string(type) + ", value " +
                   std::to_string(value));
      expect_match({"fill_any_like", {{"X", in}}, {"Out"}, {{"value", value}, {"dtype", type}}});
    }
  // Rank 0 and empty X; Out written over X, the dtype changing.
  for (const shape_t& dims : {shape_t{}, shape_t{0, 4}})
    expect_match({"fill_any_like", {{"X", random(dims, -1.f, 1.f, 218)}}, {"Out"},
                  {{"value", 3.f}, {"dtype", int64}}});
  expect_match({.op = "fill_any_like",
                .inputs = {{"X", x}},
                .outputs = {"Out"},
                .as = {{"value", -4.f}, {"dtype", int32}},
                .in_place = {{0, 0}}});
}

INSTANTIATE_TEST_SUITE_P(Target, CudaKernels, ::testing::Values(place::kind::gpu, place::kind::cpu),
                         [](const ::testing::TestParamInfo<place::kind>& info) {
                           return info.param == place::kind::gpu ? "gpu" : "cpu_harness";
                         });

} // namespace
} // namespace pe
