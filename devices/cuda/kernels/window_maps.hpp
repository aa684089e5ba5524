#pragma once

// The index math of the sliding-window CUDA kernels, pool2d and conv2d (NCHW), over the
// geometry devices/window_shapes.hpp computes for the CPU kernels:
//   - pool2d forward, one output element per op(i): max over the window clipped to the input,
//     or its sum over a divisor (exclusive: the real elements; else Paddle's clipped window,
//     as the CPU kernel's divisor fix computes it);
//   - pool2d backward, one input element per op(i), gathering from the windows that cover it
//     (no atomics): max pooling's grad goes to each window's first maximum (row-major) equal
//     to Out, Paddle's rule; avg pooling's spreads Out@GRAD / divisor;
//   - conv2d as im2col, GEMM (cuBLAS), and col2im for Input@GRAD (a gather per input element).

#include <cstdint>

#include "devices/cuda/kernels/host_device.hpp"
#include "devices/window_shapes.hpp"

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
    if (hb >= he || wb >= we) {
      out[i] = 0.f;
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

/// conv2d's geometry for im2col: Input [n, c, h.in, w.in], the column matrix of one image
/// [c * kh * kw, h.out * w.out] (row (ci * kh + ki) * kw + kj, column oh * w.out + ow).
struct conv_plan {
  std::int64_t n, c;
  window_1d h, w;

  PE_HOST_DEVICE std::int64_t rows() const { return c * h.kernel * w.kernel; }
  PE_HOST_DEVICE std::int64_t cols() const { return h.out * w.out; }
};

/// col[img][row][col] = the input element the filter tap `row` sees at output `col` (0 in
/// the padding), one column-matrix element per op(i) over n * rows * cols.
struct im2col_map {
  const float* input;
  float* col;
  conv_plan p;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const std::int64_t q = i % p.cols(), r = i / p.cols() % p.rows(), img = i / (p.cols() * p.rows());
    const std::int64_t kj = r % p.w.kernel, ki = r / p.w.kernel % p.h.kernel, ci = r / (p.w.kernel * p.h.kernel);
    const std::int64_t ow = q % p.w.out, oh = q / p.w.out;
    const std::int64_t ih = p.h.start(oh) + ki * p.h.dilation, iw = p.w.start(ow) + kj * p.w.dilation;
    col[i] = ih >= 0 && ih < p.h.in && iw >= 0 && iw < p.w.in
                 ? input[((img * p.c + ci) * p.h.in + ih) * p.w.in + iw]
                 : 0.f;
  }
};

/// Input@GRAD[i] = the sum of the column-matrix gradient over the taps that saw input i, one
/// input element per op(i).
struct col2im_map {
  const float* dcol;
  float* dinput;
  conv_plan p;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const std::int64_t iw = i % p.w.in, ih = i / p.w.in % p.h.in, ci = i / (p.w.in * p.h.in) % p.c,
                       img = i / (p.w.in * p.h.in * p.c);
    const float* base = dcol + img * p.rows() * p.cols();
    float g = 0.f;
    for (std::int64_t ki = 0; ki < p.h.kernel; ++ki) {
      const std::int64_t y = ih + p.h.pad_begin - ki * p.h.dilation;
      if (y < 0 || y % p.h.stride != 0 || y / p.h.stride >= p.h.out) continue;
      for (std::int64_t kj = 0; kj < p.w.kernel; ++kj) {
        const std::int64_t x = iw + p.w.pad_begin - kj * p.w.dilation;
        if (x < 0 || x % p.w.stride != 0 || x / p.w.stride >= p.w.out) continue;
        const std::int64_t r = (ci * p.h.kernel + ki) * p.w.kernel + kj;
        g += base[r * p.cols() + (y / p.h.stride) * p.w.out + x / p.w.stride];
      }
    }
    dinput[i] = g;
  }
};

} // namespace pe::cuda
