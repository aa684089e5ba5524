#pragma once

// The geometry of the sliding-window ops conv2d (and depthwise_conv2d) and pool2d as Paddle
// 2.6 defines it, shared by shape inference (graph/ops/conv_ops.cpp, pool_ops.cpp; extents
// may be -1 = unknown) and the oneDNN kernels (concrete extents), so a program is checked at
// build time by the rule its kernels apply. Violations are reported through `ctx.fail`.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/attribute.hpp"
#include "kernels/math_shapes.hpp"

namespace pe {

/// One spatial axis (height or width) of a sliding window, after Paddle's padding rules.
struct window_axis {
  std::int64_t in = -1; ///< input extent; -1 when unknown
  std::int64_t kernel = 1;
  std::int64_t stride = 1;
  std::int64_t dilation = 1; ///< 1 = dense (oneDNN counts dilation - 1)
  std::int64_t pad_begin = 0, pad_end = 0;
  std::int64_t out = -1; ///< output extent; -1 when unknown

  /// The extent the (dilated) kernel covers.
  std::int64_t span() const { return dilation * (kernel - 1) + 1; }

  /// The end padding for which (in + pad_begin + end - span) / stride + 1 == out holds
  /// exactly, as oneDNN requires: more than pad_end when ceil_mode rounded the output up,
  /// less when the last windows never reach the end padding. Never negative.
  std::int64_t exact_pad_end() const {
    return std::max<std::int64_t>(0, (out - 1) * stride + span() - in - pad_begin);
  }
};

/// The window attributes of a conv2d or pool2d op, as Paddle writes them.
struct window_attrs {
  std::array<std::int64_t, 2> kernel;         ///< Filter's or ksize's [height, width]
  std::vector<std::int32_t> strides;          ///< 2 values
  std::vector<std::int32_t> paddings;         ///< 2 values (h, w) or 4 (top, bottom, left, right)
  std::vector<std::int32_t> dilations;        ///< 2 values
  std::string padding_algorithm = "EXPLICIT"; ///< EXPLICIT, SAME or VALID
  bool ceil_mode = false;                     ///< pool2d: round the output extent up
};

/// The height and width windows of an input of spatial extents `in` ([H, W], -1 = unknown),
/// by Paddle's rules: SAME gives out = ceil(in / stride) with the total padding
/// max((out - 1) * stride + kernel - in, 0) split with the smaller half first, and dilation 1
/// (Paddle ignores dilations under SAME); VALID pads nothing; then
/// out = (in + pads - span [+ stride - 1 with ceil_mode]) / stride + 1.
template <failure_sink C>
std::array<window_axis, 2> window_axes(const C& ctx, const std::array<std::int64_t, 2>& in,
                                       const window_attrs& a) {
  const auto expect_pair = [&](const char* name, const std::vector<std::int32_t>& v) {
    if (v.size() != 2 || v[0] < 1 || v[1] < 1)
      ctx.fail(std::string(name) + " must be 2 positive values (height, width), got " +
               to_string(v));
  };
  expect_pair("strides", a.strides);
  expect_pair("dilations", a.dilations);
  if (a.paddings.size() != 2 && a.paddings.size() != 4)
    ctx.fail("paddings must have 2 values (height, width) or 4 (top, bottom, left, right), got " +
             to_string(a.paddings));
  if (std::any_of(a.paddings.begin(), a.paddings.end(), [](std::int32_t p) { return p < 0; }))
    ctx.fail("paddings must not be negative, got " + to_string(a.paddings));
  const std::string& algorithm = a.padding_algorithm;
  if (algorithm != "EXPLICIT" && algorithm != "SAME" && algorithm != "VALID")
    ctx.fail("padding_algorithm must be EXPLICIT, SAME or VALID, got '" + algorithm + "'");

  std::array<window_axis, 2> axes;
  for (std::size_t i = 0; i < 2; ++i) {
    window_axis& w = axes[i];
    const bool four = a.paddings.size() == 4;
    w = {.in = in[i],
         .kernel = a.kernel[i],
         .stride = a.strides[i],
         .dilation = a.dilations[i],
         .pad_begin = a.paddings[four ? 2 * i : i],
         .pad_end = a.paddings[four ? 2 * i + 1 : i],
         .out = -1};
    if (algorithm == "VALID") w.pad_begin = w.pad_end = 0;
    if (algorithm == "SAME") w.dilation = 1;
    if (w.in < 0) continue;
    if (algorithm == "SAME") {
      const std::int64_t out = (w.in + w.stride - 1) / w.stride;
      const std::int64_t pad = std::max<std::int64_t>((out - 1) * w.stride + w.kernel - w.in, 0);
      w.pad_begin = pad / 2;
      w.pad_end = pad - pad / 2;
    }
    const std::int64_t room = w.in + w.pad_begin + w.pad_end - w.span();
    if (room < 0)
      ctx.fail(std::string(i == 0 ? "height" : "width") + ": the window spans " +
               std::to_string(w.span()) + " but the padded input has only " +
               std::to_string(w.in + w.pad_begin + w.pad_end) + " (input " + std::to_string(w.in) +
               ", paddings " + std::to_string(w.pad_begin) + " + " + std::to_string(w.pad_end) +
               ")");
    w.out = (room + (a.ceil_mode ? w.stride - 1 : 0)) / w.stride + 1;
  }
  return axes;
}

/// Fails unless `format` (conv2d's data_format, batch_norm's data_layout) is NCHW; Paddle
/// reads "AnyLayout" as NCHW too. NHWC is not implemented.
template <failure_sink C>
void expect_nchw(const C& ctx, const std::string& attr, const std::string& format) {
  if (format != "NCHW" && format != "AnyLayout")
    ctx.fail(attr + " '" + format + "' is not supported; only NCHW is implemented");
}

// --- conv2d ----------------------------------------------------------------------------

/// conv2d's (and depthwise_conv2d's) geometry: Input [N, C, H, W] and Filter
/// [M, C / groups, kh, kw] give Output [N, M, OH, OW].
struct conv_geometry {
  std::int64_t groups;
  std::array<window_axis, 2> axes; ///< height, width
  shape_t out;
};

template <failure_sink C>
conv_geometry infer_conv(const C& ctx, const shape_t& input, const shape_t& filter,
                         const attribute_map& a) {
  expect_nchw(ctx, "data_format", a.get<std::string>("data_format"));
  if (input.size() != 4) ctx.fail("Input must be [N, C, H, W], got " + to_string(input));
  if (filter.size() != 4 || filter[2] < 1 || filter[3] < 1)
    ctx.fail("Filter must be [M, C / groups, kh, kw] with known kh and kw, got " +
             to_string(filter));
  const std::int64_t groups = a.get<std::int32_t>("groups");
  if (groups < 1) ctx.fail("groups must be >= 1, got " + std::to_string(groups));
  if (input[1] >= 0 && filter[1] >= 0 && input[1] != filter[1] * groups)
    ctx.fail("Input " + to_string(input) + " has " + std::to_string(input[1]) +
             " channels, but Filter " + to_string(filter) + " with groups " +
             std::to_string(groups) + " takes " + std::to_string(filter[1] * groups));
  if (filter[0] >= 0 && filter[0] % groups != 0)
    ctx.fail("Filter " + to_string(filter) + " has " + std::to_string(filter[0]) +
             " output channels, not a multiple of groups " + std::to_string(groups));
  const auto axes = window_axes(ctx, {input[2], input[3]},
                                {.kernel = {filter[2], filter[3]},
                                 .strides = a.get<std::vector<std::int32_t>>("strides"),
                                 .paddings = a.get<std::vector<std::int32_t>>("paddings"),
                                 .dilations = a.get<std::vector<std::int32_t>>("dilations"),
                                 .padding_algorithm = a.get<std::string>("padding_algorithm"),
                                 .ceil_mode = false});
  return {groups, axes, {input[0], filter[0], axes[0].out, axes[1].out}};
}

// --- pool2d ----------------------------------------------------------------------------

/// pool2d's geometry: X [N, C, H, W] gives Out [N, C, OH, OW].
struct pool_geometry {
  bool max;       ///< pooling_type "max", else "avg"
  bool exclusive; ///< avg: divide by the real (unpadded) elements of the window
  std::array<window_axis, 2> axes;
  shape_t out;
};

/// Global pooling (global_pooling, or adaptive with ksize [1, 1], which is the same) takes
/// the kernel [H, W] without padding. Other adaptive pooling is not implemented.
template <failure_sink C>
pool_geometry infer_pool(const C& ctx, const shape_t& x, const attribute_map& a) {
  const std::string& type = a.get<std::string>("pooling_type");
  if (type != "max" && type != "avg")
    ctx.fail("pooling_type must be 'max' or 'avg', got '" + type + "'");
  expect_nchw(ctx, "data_format", a.get<std::string>("data_format"));
  if (x.size() != 4) ctx.fail("X must be [N, C, H, W], got " + to_string(x));
  const auto& ksize = a.get<std::vector<std::int32_t>>("ksize");
  const bool adaptive = a.get<bool>("adaptive");
  const bool unit_kernel = ksize == std::vector<std::int32_t>{1, 1};
  if (adaptive && !unit_kernel)
    ctx.fail("adaptive pooling to an output of " + to_string(ksize) +
             " is not supported; only the global case (output [1, 1]) is implemented");
  const bool global = a.get<bool>("global_pooling") || adaptive;
  if (!global && (ksize.size() != 2 || ksize[0] < 1 || ksize[1] < 1))
    ctx.fail("ksize must be 2 positive values (height, width), got " + to_string(ksize));
  window_attrs w{.kernel = {global ? x[2] : ksize[0], global ? x[3] : ksize[1]},
                 .strides = a.get<std::vector<std::int32_t>>("strides"),
                 .paddings = a.get<std::vector<std::int32_t>>("paddings"),
                 .dilations = {1, 1},
                 .padding_algorithm = a.get<std::string>("padding_algorithm"),
                 .ceil_mode = a.get<bool>("ceil_mode")};
  if (global) {
    w.paddings = {0, 0};
    w.padding_algorithm = "EXPLICIT";
  }
  auto axes = window_axes(ctx, {x[2], x[3]}, w);
  if (global) axes[0].out = axes[1].out = 1;
  // A window over padding alone (a padding of at least the kernel, or ceil_mode's last window
  // starting past the input) holds no element. Paddle writes its start value there (the
  // lowest float for max, NaN for an average dividing by zero elements); oneDNN refuses the
  // exclusive average. Refused for every type, as PyTorch does, so that no place computes it.
  for (std::size_t i = 0; i < 2 && !global; ++i) {
    const window_axis& ax = axes[i];
    if (ax.in < 0) continue; // unknown until run time
    const bool first_empty = ax.pad_begin >= ax.kernel, last_empty = ax.exact_pad_end() >= ax.kernel;
    if (first_empty || last_empty)
      ctx.fail(std::string(i == 0 ? "height" : "width") + ": the " + (first_empty ? "first" : "last") +
               " window holds only padding (input " + std::to_string(ax.in) + ", kernel " +
               std::to_string(ax.kernel) + ", stride " + std::to_string(ax.stride) + ", paddings " +
               std::to_string(ax.pad_begin) + " + " + std::to_string(ax.pad_end) +
               (w.ceil_mode ? ", ceil_mode" : "") + "); use paddings below the kernel" +
               (w.ceil_mode ? " or ceil_mode = false" : ""));
  }
  return {type == "max", a.get<bool>("exclusive"), axes, {x[0], x[1], axes[0].out, axes[1].out}};
}

} // namespace pe
