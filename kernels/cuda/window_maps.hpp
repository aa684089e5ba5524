#pragma once

// The index math of the sliding-window CUDA kernels, pool2d and conv2d (NCHW), over the
// geometry kernels/window_shapes.hpp computes for the CPU kernels:
//   - pool2d forward, one output element per op(i): max over the window clipped to the input,
//     or its sum over a divisor (exclusive: the real elements; else Paddle's clipped window,
//     as the CPU kernel's divisor fix computes it);
//   - pool2d backward, one input element per op(i), gathering from the windows that cover it
//     (no atomics): max pooling's grad goes to each window's first maximum (row-major) equal
//     to Out, Paddle's rule; avg pooling's spreads Out@GRAD / divisor;
//   - conv2d runs through cuDNN (conv_kernels.cu), which pads symmetrically only: the choice
//     between cuDNN's padding and a zero-padded copy of the input (cudnn_axis_of), and the
//     pad / crop maps of that copy and of Input@GRAD's.

#include <cfloat>
#include <cstdint>

#include "kernels/cuda/host_device.hpp"
#include "kernels/window_shapes.hpp"

namespace pe::cuda {

/// One spatial axis of a window, as plain values.
struct window_1d {
  std::int64_t in, out, kernel, stride, pad_begin, dilation;

  static window_1d of(const window_axis& a) {
    return {a.in, a.out, a.kernel, a.stride, a.pad_begin, a.dilation};
  }
  PE_HOST_DEVICE std::int64_t start(std::int64_t o) const { return o * stride - pad_begin; }
  /// Output o's (undilated) window clipped to the input: [begin, end).
  PE_HOST_DEVICE std::int64_t begin(std::int64_t o) const {
    const std::int64_t s = start(o);
    return s > 0 ? s : 0;
  }
  PE_HOST_DEVICE std::int64_t end(std::int64_t o) const {
    const std::int64_t e = start(o) + kernel;
    return e < in ? e : in;
  }
  /// Paddle's avg divisor along this axis with exclusive = false: the window clipped to
  /// [-pad_begin, in + pad_begin), or the kernel when that is empty.
  PE_HOST_DEVICE std::int64_t paddle_divisor(std::int64_t o) const {
    const std::int64_t limit = in + pad_begin, e = start(o) + kernel;
    const std::int64_t clipped = (e < limit ? e : limit) - start(o);
    return clipped > 0 ? clipped : kernel;
  }
  /// The first and last outputs whose window covers input position x (last < first: none).
  PE_HOST_DEVICE std::int64_t first_cover(std::int64_t x) const {
    const std::int64_t lowest = x + pad_begin - kernel + 1; // o * stride >= lowest
    return lowest <= 0 ? 0 : (lowest + stride - 1) / stride;
  }
  PE_HOST_DEVICE std::int64_t last_cover(std::int64_t x) const {
    const std::int64_t o = (x + pad_begin) / stride;
    return o < out - 1 ? o : out - 1;
  }
};

/// pool2d over planes of [h.in, w.in] into planes of [h.out, w.out].
struct pool_plan {
  window_1d h, w;
  bool max, exclusive;

  PE_HOST_DEVICE float divisor(std::int64_t oh, std::int64_t ow) const {
    if (exclusive)
      return static_cast<float>((h.end(oh) - h.begin(oh)) * (w.end(ow) - w.begin(ow)));
    return static_cast<float>(h.paddle_divisor(oh) * w.paddle_divisor(ow));
  }
  /// The in-plane offset of window (oh, ow)'s first element equal to `value`, or -1.
  PE_HOST_DEVICE std::int64_t first_equal(const float* plane, std::int64_t oh, std::int64_t ow,
                                          float value) const {
    for (std::int64_t ih = h.begin(oh); ih < h.end(oh); ++ih)
      for (std::int64_t iw = w.begin(ow); iw < w.end(ow); ++iw)
        if (plane[ih * w.in + iw] == value) return ih * w.in + iw;
    return -1;
  }
};

struct pool_forward_map {
  const float* x;
  float* out;
  pool_plan p;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const std::int64_t ow = i % p.w.out, oh = i / p.w.out % p.h.out, plane = i / (p.w.out * p.h.out);
    const float* xp = x + plane * p.h.in * p.w.in;
    const std::int64_t hb = p.h.begin(oh), he = p.h.end(oh), wb = p.w.begin(ow), we = p.w.end(ow);
    if (hb >= he || wb >= we) { // padding alone (infer_pool refuses it): Paddle's start value
      out[i] = p.max ? -FLT_MAX : 0.f;
      return;
    }
    if (p.max) {
      float m = xp[hb * p.w.in + wb];
      for (std::int64_t ih = hb; ih < he; ++ih)
        for (std::int64_t iw = wb; iw < we; ++iw) {
          const float v = xp[ih * p.w.in + iw];
          m = v > m ? v : m;
        }
      out[i] = m;
      return;
    }
    float sum = 0.f;
    for (std::int64_t ih = hb; ih < he; ++ih)
      for (std::int64_t iw = wb; iw < we; ++iw) sum += xp[ih * p.w.in + iw];
    out[i] = sum / p.divisor(oh, ow);
  }
};

/// X@GRAD, one input element per op(i); `out` (Out) is read by max pooling only.
struct pool_backward_map {
  const float* x;
  const float* out;
  const float* dout;
  float* dx;
  pool_plan p;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const std::int64_t iw = i % p.w.in, ih = i / p.w.in % p.h.in, plane = i / (p.w.in * p.h.in);
    const std::int64_t out_plane = plane * p.h.out * p.w.out;
    const float* xp = x + plane * p.h.in * p.w.in;
    const std::int64_t self = ih * p.w.in + iw;
    float g = 0.f;
    for (std::int64_t oh = p.h.first_cover(ih); oh <= p.h.last_cover(ih); ++oh) {
      if (ih < p.h.begin(oh) || ih >= p.h.end(oh)) continue;
      for (std::int64_t ow = p.w.first_cover(iw); ow <= p.w.last_cover(iw); ++ow) {
        if (iw < p.w.begin(ow) || iw >= p.w.end(ow)) continue;
        const std::int64_t o = out_plane + oh * p.w.out + ow;
        if (p.max) {
          if (p.first_equal(xp, oh, ow, out[o]) == self) g += dout[o];
        } else {
          g += dout[o] / p.divisor(oh, ow);
        }
      }
    }
    dx[i] = g;
  }
};

/// How one spatial axis of a convolution is handed to cuDNN, which pads both ends of an axis
/// alike: the geometry's own pad_begin when cuDNN's output extent with it,
/// (in + 2 * pad_begin - span) / stride + 1, is the geometry's `out` (the windows then start
/// at the same places and read zeros past the input either way); otherwise the input is
/// copied into a zero-padded scratch (`before` = pad_begin zeros first,
/// window_axis::exact_pad_end() zeros after) and cuDNN pads nothing.
struct cudnn_axis {
  std::int64_t in;     ///< the extent cuDNN sees: the input's, or the padded copy's
  std::int64_t pad;    ///< cuDNN's padding at both ends
  std::int64_t before; ///< zeros the copy puts before the input (0 when not copied)
  bool copied;         ///< whether this axis needs the padded copy
};

/// cudnn_axis for one window axis with known extents (in >= 0, out >= 1).
inline cudnn_axis cudnn_axis_of(const window_axis& a) {
  const std::int64_t symmetric = a.in + 2 * a.pad_begin - a.span();
  if (symmetric >= 0 && symmetric / a.stride + 1 == a.out) return {a.in, a.pad_begin, 0, false};
  return {a.pad_begin + a.in + a.exact_pad_end(), 0, a.pad_begin, true};
}

/// A convolution as cuDNN runs it: Input [n, c, h.in, w.in] (the padded copy's extents when
/// an axis is copied), Filter [m, c / groups, kh, kw], symmetric paddings h.pad and w.pad,
/// Output [n, m, h_window.out, w_window.out] as the geometry has it.
struct cudnn_conv {
  std::int64_t n, c, m, groups;
  window_axis h_window, w_window; ///< the geometry's axes (kernel, stride, dilation, out)
  cudnn_axis h, w;

  static cudnn_conv of(const conv_geometry& g, const shape_t& input, const shape_t& filter) {
    return {input[0], input[1], filter[0], g.groups, g.axes[0], g.axes[1],
            cudnn_axis_of(g.axes[0]), cudnn_axis_of(g.axes[1])};
  }
  bool copied() const { return h.copied || w.copied; }
  /// The input as cuDNN sees it.
  shape_t input_dims() const { return {n, c, h.in, w.in}; }
};

/// The zero-padded copy of an NCHW tensor of planes [h, w] into planes [padded_h, padded_w],
/// the original at offset (before_h, before_w); planes = N * C.
struct pad_plan {
  std::int64_t h, w, padded_h, padded_w, before_h, before_w;

  /// The copy of cudnn_conv's input (Input [n, c, h, w]).
  static pad_plan of(const cudnn_conv& cc) {
    return {cc.h_window.in, cc.w_window.in, cc.h.in, cc.w.in, cc.h.before, cc.w.before};
  }
  /// The index in the original plane of padded element (ph, pw), or -1 in the padding.
  PE_HOST_DEVICE std::int64_t source(std::int64_t ph, std::int64_t pw) const {
    const std::int64_t ih = ph - before_h, iw = pw - before_w;
    return ih >= 0 && ih < h && iw >= 0 && iw < w ? ih * w + iw : -1;
  }
};

/// padded[i] = the input element at padded position i, or 0 in the padding; one padded
/// element per op(i) over planes * padded_h * padded_w.
struct pad_map {
  const float* x;
  float* padded;
  pad_plan p;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const std::int64_t pw = i % p.padded_w, ph = i / p.padded_w % p.padded_h,
                       plane = i / (p.padded_w * p.padded_h);
    const std::int64_t s = p.source(ph, pw);
    padded[i] = s >= 0 ? x[plane * p.h * p.w + s] : 0.f;
  }
};

/// x[i] = the padded tensor's element over original element i (the padding's share of a
/// gradient is dropped); one original element per op(i) over planes * h * w.
struct crop_map {
  const float* padded;
  float* x;
  pad_plan p;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const std::int64_t iw = i % p.w, ih = i / p.w % p.h, plane = i / (p.w * p.h);
    x[i] = padded[(plane * p.padded_h + ih + p.before_h) * p.padded_w + iw + p.before_w];
  }
};

} // namespace pe::cuda
