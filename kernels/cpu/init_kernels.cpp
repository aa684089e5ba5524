// CPU kernels of the initializer ops: fill_constant, uniform_random, gaussian_random; and
// fill_any_like, which fills a tensor of X's dims.
//
// The random ops draw from std::mt19937_64 and turn its bits into floats themselves: the
// engine's output is fully specified by the C++ standard, whereas std::*_distribution
// differ between standard libraries. A nonzero `seed` therefore gives bit-identical tensors
// on every run and machine; seed 0 means "no fixed seed" as in Paddle and draws the seed
// from std::random_device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/fill_value.hpp"
#include "kernels/kernel.hpp"

namespace pe {

namespace {

/// Output "Out" resized to attribute `shape` with element type `type`.
tensor& shaped_output(kernel_context& ctx, dtype type) {
  tensor& out = ctx.output("Out");
  out.resize(type, ctx.attrs().get<std::vector<std::int64_t>>("shape"));
  return out;
}

/// Fills Out with fill_value's value (`str_value` when it is set, else `value`).
template <class T>
void fill_with(kernel_context& ctx, tensor& out) {
  const auto v =
      fill_value<T>(ctx.attrs().get<float>("value"), ctx.attrs().get<std::string>("str_value"));
  if (!v.problem.empty()) ctx.fail(v.problem);
  std::fill_n(out.data<T>(), out.numel(), v.value);
}

void fill_constant(kernel_context& ctx) {
  const auto type = static_cast<dtype>(ctx.attrs().get<std::int32_t>("dtype"));
  switch (type) {
    case dtype::fp32: return fill_with<float>(ctx, shaped_output(ctx, type));
    case dtype::int64: return fill_with<std::int64_t>(ctx, shaped_output(ctx, type));
    case dtype::int32: return fill_with<std::int32_t>(ctx, shaped_output(ctx, type));
    case dtype::boolean: return fill_with<bool>(ctx, shaped_output(ctx, type));
    default:
      ctx.fail("dtype " + to_string(type) + " is not supported (FP32, INT64, INT32 or BOOL)");
  }
}

/// Out = X's dims, every element fill_any_like's value in its dtype (with_fill_like: the
/// dtype attribute, or X's when it is negative). X's elements are not read; Out may be X.
void fill_any_like(kernel_context& ctx) {
  const tensor& x = ctx.input("X");
  if (!x.initialized()) ctx.fail("input X is uninitialised");
  const shape_t dims = x.shape(); // a copy: resizing Out may resize X
  const std::string problem =
      with_fill_like(ctx.attrs().get<std::int32_t>("dtype"), x.type(),
                     ctx.attrs().get<float>("value"), [&](dtype type, auto value) {
                       tensor& out = ctx.output("Out");
                       out.resize(type, dims);
                       std::fill_n(out.data<decltype(value)>(), out.numel(), value);
                     });
  if (!problem.empty()) ctx.fail(problem);
}

/// The FP32 output of a random op (the only dtype they support).
std::span<float> random_output(kernel_context& ctx) {
  const auto type = static_cast<dtype>(ctx.attrs().get<std::int32_t>("dtype"));
  if (type != dtype::fp32) ctx.fail("dtype " + to_string(type) + " is not supported (FP32)");
  return shaped_output(ctx, type).values<float>();
}

/// The generator of a random op, seeded with attribute `seed` (see the file comment).
std::mt19937_64 generator_of(const kernel_context& ctx) {
  const auto seed = ctx.attrs().get<std::int32_t>("seed");
  if (seed != 0) return std::mt19937_64(static_cast<std::uint64_t>(seed));
  std::random_device entropy;
  return std::mt19937_64((std::uint64_t{entropy()} << 32) | entropy());
}

/// A double uniform in [0, 1): the generator's top 53 bits scaled by 2^-53 (exact).
double unit_uniform(std::mt19937_64& g) {
  return static_cast<double>(g() >> 11) * 0x1.0p-53;
}

/// Uniform in [min, max]: min + (max - min) * u computed in double, then rounded to float
/// (the rounding can reach max itself when max - min is tiny relative to max).
void uniform_random(kernel_context& ctx) {
  const double lo = ctx.attrs().get<float>("min");
  const double hi = ctx.attrs().get<float>("max");
  if (lo > hi) ctx.fail("min " + std::to_string(lo) + " exceeds max " + std::to_string(hi));
  auto g = generator_of(ctx);
  for (float& v : random_output(ctx)) v = static_cast<float>(lo + (hi - lo) * unit_uniform(g));
}

/// Normal(mean, std) by the Box-Muller transform: each pair of uniforms gives two samples.
void gaussian_random(kernel_context& ctx) {
  const double mean = ctx.attrs().get<float>("mean");
  const double stddev = ctx.attrs().get<float>("std");
  if (stddev < 0) ctx.fail("std must be >= 0, got " + std::to_string(stddev));
  auto g = generator_of(ctx);
  std::span<float> out = random_output(ctx);
  for (std::size_t i = 0; i < out.size(); i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - unit_uniform(g))); // 1 - u in (0, 1]
    const double angle = 2.0 * std::numbers::pi * unit_uniform(g);
    out[i] = static_cast<float>(mean + stddev * radius * std::cos(angle));
    if (i + 1 < out.size())
      out[i + 1] = static_cast<float>(mean + stddev * radius * std::sin(angle));
  }
}

} // namespace

void register_init_kernels(kernel_registry& r) {
  r.add("fill_constant", place::kind::cpu, fill_constant);
  r.add("fill_any_like", place::kind::cpu, fill_any_like);
  r.add("uniform_random", place::kind::cpu, uniform_random);
  r.add("gaussian_random", place::kind::cpu, gaussian_random);
}

} // namespace pe
