// CUDA kernels of conv2d and depthwise_conv2d and their grads (NCHW, FP32) through cuDNN, on
// the geometry of kernels/window_shapes.hpp (the CPU kernels' rule): groups through
// cudnnSetConvolutionGroupCount (depthwise: groups == C), FMA math only (no TF32, so results
// stay within 1e-5 of the CPU's). cuDNN pads both ends of an axis alike; an axis whose
// geometry it cannot express so (asymmetric paddings, SAME with an odd total) runs on a
// zero-padded copy of the input, and Input@GRAD is then computed into such a copy and cropped
// (window_maps.hpp's cudnn_axis_of, pad_map, crop_map). The algorithms come from cuDNN's
// heuristics (the _v7 queries) once per shape and device, then from a cache; only those that
// sum the products directly (no FFT, no Winograd) are taken, and one that cannot run gives
// way to the next (conv_algorithms.hpp).
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/conv_algorithms.hpp"
#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/cudnn_descriptors.hpp"
#include "kernels/cuda/cudnn_handles.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/cuda/window_maps.hpp"

namespace pe::cuda {

namespace {

constexpr auto gpu = place::kind::gpu;

/// The largest workspace a chosen algorithm may ask for: above it the next candidate is
/// taken (implicit GEMM needs none, so some candidate always fits).
constexpr std::size_t workspace_limit = std::size_t{1} << 30;

int as_int(const kernel_context& ctx, std::int64_t v, const char* what) {
  if (v < 0 || v > 0x7fffffff)
    ctx.fail(std::string(what) + " " + std::to_string(v) + " exceeds cuDNN's int range");
  return static_cast<int>(v);
}

/// The operands of one convolution kernel call.
struct conv_setup {
  const tensor& input;
  const tensor& filter;
  cudnn_conv cc;
  shape_t out_dims;
};

conv_setup conv_setup_of(const kernel_context& ctx) {
  const tensor& input = gpu_fp32_input(ctx, "Input");
  const tensor& filter = gpu_fp32_input(ctx, "Filter");
  const conv_geometry g = infer_conv(ctx, input.shape(), filter.shape(), ctx.attrs());
  return {input, filter, cudnn_conv::of(g, input.shape(), filter.shape()), g.out};
}

/// The descriptors of a convolution: x (the input as cuDNN sees it), w, y, and the
/// convolution itself. Checks that cuDNN's output extents are the geometry's.
struct conv_descriptors {
  tensor_descriptor x, y;
  filter_descriptor w;
  convolution_descriptor conv;

  conv_descriptors(const kernel_context& ctx, const cudnn_conv& cc)
      : x(ctx, "cudnnCreateTensorDescriptor"), y(ctx, "cudnnCreateTensorDescriptor"),
        w(ctx, "cudnnCreateFilterDescriptor"), conv(ctx, "cudnnCreateConvolutionDescriptor") {
    const int n = as_int(ctx, cc.n, "batch"), c = as_int(ctx, cc.c, "channels"),
              m = as_int(ctx, cc.m, "filters"), groups = as_int(ctx, cc.groups, "groups");
    check(ctx,
          cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c,
                                     as_int(ctx, cc.h.in, "height"), as_int(ctx, cc.w.in, "width")),
          "cudnnSetTensor4dDescriptor (Input)");
    check(ctx,
          cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, m, c / groups,
                                     as_int(ctx, cc.h_window.kernel, "kernel height"),
                                     as_int(ctx, cc.w_window.kernel, "kernel width")),
          "cudnnSetFilter4dDescriptor");
    check(ctx,
          cudnnSetConvolution2dDescriptor(
              conv, as_int(ctx, cc.h.pad, "height padding"), as_int(ctx, cc.w.pad, "width padding"),
              as_int(ctx, cc.h_window.stride, "height stride"),
              as_int(ctx, cc.w_window.stride, "width stride"),
              as_int(ctx, cc.h_window.dilation, "height dilation"),
              as_int(ctx, cc.w_window.dilation, "width dilation"), CUDNN_CROSS_CORRELATION,
              CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    check(ctx, cudnnSetConvolutionGroupCount(conv, groups), "cudnnSetConvolutionGroupCount");
    check(ctx, cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
    int on = 0, om = 0, oh = 0, ow = 0;
    check(ctx, cudnnGetConvolution2dForwardOutputDim(conv, x, w, &on, &om, &oh, &ow),
          "cudnnGetConvolution2dForwardOutputDim");
    const shape_t want = {cc.n, cc.m, cc.h_window.out, cc.w_window.out};
    if (shape_t{on, om, oh, ow} != want)
      ctx.fail("cuDNN's output " + to_string(shape_t{on, om, oh, ow}) + " differs from the geometry's " +
               to_string(want) + " (internal error in the padding choice)");
    check(ctx,
          cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, om, oh, ow),
          "cudnnSetTensor4dDescriptor (Output)");
  }
};

// --- algorithms ------------------------------------------------------------------------

enum class pass : std::int64_t { forward, backward_data, backward_filter };

/// What the choice depends on: the pass, the device, and every extent and attribute.
using algo_key = std::array<std::int64_t, 17>;

algo_key key_of(pass p, int device, const cudnn_conv& cc) {
  return {static_cast<std::int64_t>(p), device, cc.n, cc.c, cc.h.in, cc.w.in, cc.m, cc.groups,
          cc.h_window.kernel, cc.w_window.kernel, cc.h.pad, cc.w.pad, cc.h_window.stride,
          cc.w_window.stride, cc.h_window.dilation, cc.w_window.dilation, cc.h_window.out};
}

/// Whether an algorithm sums the products directly (implicit / precomputed GEMM, GEMM,
/// direct, and the backward passes' ALGO_0 / ALGO_1 / ALGO_3), as the CPU kernels do. FFT and
/// Winograd transform the operands first: their rounding error grows with the transform and
/// falls outside the 1e-5 agreement with the CPU kernels, so they are never taken.
bool sums_directly(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}
bool sums_directly(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}
bool sums_directly(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}

/// A heuristic result of any pass in the terms of conv_algorithms.hpp's ranking.
template <class Perf>
heuristic_result described(const Perf& r) {
  using m = heuristic_result::math;
  return {static_cast<int>(r.algo), r.status == CUDNN_STATUS_SUCCESS,
          r.mathType == CUDNN_FMA_MATH       ? m::fma
          : r.mathType == CUDNN_DEFAULT_MATH ? m::default_math
                                             : m::tensor_op,
          r.determinism == CUDNN_DETERMINISTIC, sums_directly(r.algo), r.memory};
}

/// One pass's heuristic query: how many results there can be, the results (fastest first),
/// ranked by rank_algorithms, each with its workspace; `what` names the pass in errors.
template <class Perf, class MaxCount, class Heuristics, class Workspace>
std::vector<conv_algorithm> ask(const kernel_context& ctx, const char* what, MaxCount max_count,
                                Heuristics heuristics, Workspace workspace) {
  int max = 0, count = 0;
  check(ctx, max_count(&max), "cudnnGetConvolution*AlgorithmMaxCount");
  std::vector<Perf> results(static_cast<std::size_t>(max));
  check(ctx, heuristics(max, &count, results.data()), "cudnnGetConvolution*Algorithm_v7");
  std::vector<heuristic_result> described_results;
  for (int i = 0; i < count; ++i) described_results.push_back(described(results[static_cast<std::size_t>(i)]));
  std::vector<conv_algorithm> candidates;
  for (const int algo : rank_algorithms(described_results, workspace_limit)) {
    std::size_t bytes = 0;
    if (workspace(algo, &bytes) == CUDNN_STATUS_SUCCESS && bytes <= workspace_limit)
      candidates.push_back({algo, bytes});
  }
  if (candidates.empty())
    ctx.fail(std::string(what) + ": cuDNN proposed no direct-summation algorithm without tensor-op " +
             "math and with a workspace of at most " + std::to_string(workspace_limit) + " bytes (" +
             std::to_string(count) + " candidates)");
  return candidates;
}

std::vector<conv_algorithm> ask_heuristics(const kernel_context& ctx, cudnnHandle_t h,
                                           const conv_descriptors& d, pass p) {
  switch (p) {
    case pass::forward:
      return ask<cudnnConvolutionFwdAlgoPerf_t>(
          ctx, "conv forward", [&](int* max) { return cudnnGetConvolutionForwardAlgorithmMaxCount(h, max); },
          [&](int max, int* count, cudnnConvolutionFwdAlgoPerf_t* r) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, max, count, r);
          },
          [&](int algo, std::size_t* bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y,
                                                           static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
          });
    case pass::backward_data:
      return ask<cudnnConvolutionBwdDataAlgoPerf_t>(
          ctx, "conv Input@GRAD",
          [&](int* max) { return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, max); },
          [&](int max, int* count, cudnnConvolutionBwdDataAlgoPerf_t* r) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, max, count, r);
          },
          [&](int algo, std::size_t* bytes) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(
                h, d.w, d.y, d.conv, d.x, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
          });
    case pass::backward_filter:
      return ask<cudnnConvolutionBwdFilterAlgoPerf_t>(
          ctx, "conv Filter@GRAD",
          [&](int* max) { return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, max); },
          [&](int max, int* count, cudnnConvolutionBwdFilterAlgoPerf_t* r) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, max, count, r);
          },
          [&](int algo, std::size_t* bytes) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                h, d.x, d.y, d.conv, d.w, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
          });
  }
  ctx.fail("unknown convolution pass");
}

/// The candidate algorithms of pass `p` for this convolution on the current device: asked of
/// the heuristics once per key, so a training step does not ask again.
algorithm_candidates& candidates_of(const kernel_context& ctx, cudnnHandle_t h, const conv_descriptors& d,
                                    const cudnn_conv& cc, pass p) {
  static std::mutex mutex;
  static auto* cache = new std::map<algo_key, std::unique_ptr<algorithm_candidates>>; // never destroyed
  int device = 0;
  check(ctx, cudaGetDevice(&device), "cudaGetDevice");
  const algo_key key = key_of(p, device, cc);
  {
    std::lock_guard lock(mutex);
    const auto it = cache->find(key);
    if (it != cache->end()) return *it->second;
  }
  auto asked = std::make_unique<algorithm_candidates>(ask_heuristics(ctx, h, d, p)); // may take a while
  std::lock_guard lock(mutex);
  return *cache->emplace(key, std::move(asked)).first->second;
}

/// A workspace of `bytes` in the place's memory (an empty tensor for 0 bytes).
tensor workspace(const kernel_context& ctx, std::size_t bytes) {
  if (bytes == 0) return tensor();
  return scratch(ctx, dtype::uint8, {static_cast<std::int64_t>(bytes)});
}

void* raw_or_null(tensor& t) { return t.initialized() && t.bytes() > 0 ? t.raw() : nullptr; }

/// Runs pass `p` with the first candidate algorithm that can (conv_algorithms.hpp):
/// `launch(algo, workspace, bytes)` issues the cuDNN call and returns its status. A refusal
/// (cuDNN's NOT_SUPPORTED or EXECUTION_FAILED categories) or a workspace the place's memory
/// cannot hold moves on to the next candidate; any other status fails the op at once.
template <class Launch>
void run_pass(const kernel_context& ctx, cudnnHandle_t h, const conv_descriptors& d, const cudnn_conv& cc,
              pass p, const char* what, Launch launch) {
  const auto failure = candidates_of(ctx, h, d, cc, p).run([&](const conv_algorithm& a) -> attempt {
    tensor ws;
    try {
      ws = workspace(ctx, a.workspace);
    } catch (const error& e) {
      return {attempt::kind::unusable, "its workspace of " + std::to_string(a.workspace) + " bytes: " + e.what()};
    }
    const cudnnStatus_t status = launch(a.algo, raw_or_null(ws), a.workspace);
    if (status == CUDNN_STATUS_SUCCESS) return {};
    const int category = CUDNN_STATUS_CATEGORY(status);
    const bool refused = category == CUDNN_STATUS_NOT_SUPPORTED || category == CUDNN_STATUS_EXECUTION_FAILED;
    return {refused ? attempt::kind::unusable : attempt::kind::fatal, cudnnGetErrorString(status)};
  });
  if (failure) ctx.fail(std::string(what) + " on " + to_string(ctx.where()) + ": " + *failure);
}

/// The input as cuDNN reads it: Input itself, or its zero-padded copy (kept in `copy`).
const float* cudnn_input(const kernel_context& ctx, const conv_setup& s, tensor& copy) {
  if (!s.cc.copied()) return s.input.data<float>();
  copy = scratch(ctx, dtype::fp32, s.cc.input_dims());
  for_each(ctx, copy.numel(), pad_map{s.input.data<float>(), copy.data<float>(), pad_plan::of(s.cc)});
  return copy.data<float>();
}

constexpr float one = 1.f, nothing = 0.f;

void conv_forward(kernel_context& ctx) {
  const conv_setup s = conv_setup_of(ctx);
  write_unaliased(ctx.output("Output"), {&s.input, &s.filter}, [&](tensor& out) {
    resize_output(ctx, out, dtype::fp32, s.out_dims);
    if (out.numel() == 0) return;
    if (s.input.numel() == 0 || s.filter.numel() == 0) { // no input channels: sums of nothing
      zero(ctx, out);
      return;
    }
    const conv_descriptors d(ctx, s.cc);
    const cudnnHandle_t h = cudnn_handle(ctx);
    tensor copy;
    const float* x = cudnn_input(ctx, s, copy);
    run_pass(ctx, h, d, s.cc, pass::forward, "cudnnConvolutionForward", [&](int algo, void* ws, std::size_t bytes) {
      return cudnnConvolutionForward(h, &one, d.x, x, d.w, s.filter.data<float>(), d.conv,
                                     static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, bytes, &nothing, d.y,
                                     out.data<float>());
    });
  });
}

void conv_backward(kernel_context& ctx) {
  const conv_setup s = conv_setup_of(ctx);
  const tensor& dout = gpu_fp32_input(ctx, "Output@GRAD");
  expect_dims(ctx, "Output@GRAD", dout, s.out_dims);
  // Nothing flows when there is no output element, no input element or no filter tap: the
  // grads are zeros (cuDNN takes no empty tensors).
  const bool empty = dout.numel() == 0 || s.input.numel() == 0 || s.filter.numel() == 0;
  const cudnnHandle_t h = empty ? nullptr : cudnn_handle(ctx);
  if (ctx.has_output("Filter@GRAD"))
    write_unaliased(ctx.output("Filter@GRAD"), {&dout, &s.input, &s.filter}, [&](tensor& dw) {
      resize_output(ctx, dw, dtype::fp32, s.filter.shape());
      if (empty) {
        zero(ctx, dw);
        return;
      }
      const conv_descriptors d(ctx, s.cc);
      tensor copy;
      const float* x = cudnn_input(ctx, s, copy);
      run_pass(ctx, h, d, s.cc, pass::backward_filter, "cudnnConvolutionBackwardFilter",
               [&](int algo, void* ws, std::size_t bytes) {
                 return cudnnConvolutionBackwardFilter(h, &one, d.x, x, d.y, dout.data<float>(), d.conv,
                                                       static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws,
                                                       bytes, &nothing, d.w, dw.data<float>());
               });
    });
  if (ctx.has_output("Input@GRAD"))
    write_unaliased(ctx.output("Input@GRAD"), {&dout, &s.filter}, [&](tensor& dx) {
      resize_output(ctx, dx, dtype::fp32, s.input.shape());
      if (empty) {
        zero(ctx, dx);
        return;
      }
      const conv_descriptors d(ctx, s.cc);
      // Into a padded scratch when the input was copied: the padding's share is then dropped.
      tensor padded = s.cc.copied() ? scratch(ctx, dtype::fp32, s.cc.input_dims()) : tensor();
      float* target = s.cc.copied() ? padded.data<float>() : dx.data<float>();
      run_pass(ctx, h, d, s.cc, pass::backward_data, "cudnnConvolutionBackwardData",
               [&](int algo, void* ws, std::size_t bytes) {
                 return cudnnConvolutionBackwardData(h, &one, d.w, s.filter.data<float>(), d.y,
                                                     dout.data<float>(), d.conv,
                                                     static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws,
                                                     bytes, &nothing, d.x, target);
               });
      if (s.cc.copied())
        for_each(ctx, dx.numel(), crop_map{padded.data<float>(), dx.data<float>(), pad_plan::of(s.cc)});
    });
}

} // namespace

void register_conv_kernels(kernel_registry& r) {
  for (const std::string type : {"conv2d", "depthwise_conv2d"}) {
    r.add(type, gpu, conv_forward);
    r.add(type + "_grad", gpu, conv_backward);
  }
}

} // namespace pe::cuda
