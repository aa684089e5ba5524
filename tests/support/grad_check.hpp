#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/attribute.hpp"
#include "core/tensor.hpp"

namespace pe::testing {

/// One gradient check: an op, its inputs by slot, attributes, and which input slots'
/// gradients to compare.
///
/// The checker runs the forward kernel, takes L = sum_k w_k * out_k over `loss_outputs`
/// (w fixed random in [0.5, 1.5]), emits the grad ops with the op's registered grad maker,
/// runs their kernels with Out@GRAD = w, and compares every element of each checked
/// X@GRAD with the central difference (L(x+delta) - L(x-delta)) / (2 delta), L summed in
/// double. Error per element as Paddle's check_grad: |analytic - numeric| / |numeric|,
/// with the denominator taken as 1 where |numeric| < 1e-3.
struct grad_check_case {
  std::string op_type;
  std::map<std::string, std::vector<tensor>> inputs;
  std::vector<std::pair<std::string, attribute>> attrs;
  std::vector<std::string> check_slots;              ///< input slots, e.g. {"X", "Y"}
  std::vector<std::string> loss_outputs = {"Out"};   ///< output slots that form the loss
  /// Output slots to bind besides loss_outputs (e.g. top_k's Indices); they get zero grads.
  std::vector<std::string> extra_outputs = {};
  float delta = 5e-3f;
};

/// Succeeds when the largest relative error over all checked elements is below
/// `max_error`; otherwise reports the worst element, or why the op could not run.
::testing::AssertionResult gradient_matches(const grad_check_case& c, double max_error = 1e-3);

/// A fp32 tensor of `shape` with values uniform in [lo, hi], from `seed`.
tensor random_tensor(const shape_t& shape, std::uint64_t seed, float lo = -1.f, float hi = 1.f);

/// An int64 tensor of `shape` with values uniform in [0, bound), from `seed`.
tensor random_labels(const shape_t& shape, std::int64_t bound, std::uint64_t seed);

} // namespace pe::testing
