#include "tests/support/grad_check.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "graph/exec/bound_op.hpp"
#include "graph/exec/scope.hpp"
#include "graph/attributes.hpp"
#include "graph/op_registry.hpp"

namespace pe::testing {

namespace {

std::string var_name(const std::string& slot, std::size_t i) {
  return slot + "_" + std::to_string(i);
}

/// The forward op with inputs bound to "<slot>_<i>" and outputs to "out.<slot>_0".
proto::OpDesc forward_op(const grad_check_case& c, scope& vars) {
  proto::OpDesc op;
  op.set_type(c.op_type);
  for (const auto& [slot, tensors] : c.inputs) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      names.push_back(var_name(slot, i));
      vars.var(names.back()) = tensors[i].clone();
    }
    set_input(op, slot, names);
  }
  auto outputs = c.loss_outputs;
  outputs.insert(outputs.end(), c.extra_outputs.begin(), c.extra_outputs.end());
  for (const auto& slot : outputs) set_output(op, slot, {"out." + var_name(slot, 0)});
  for (const auto& [name, value] : c.attrs) set_attr(op, name, value);
  return op;
}

/// L = sum over loss outputs of w * out, in double.
double loss_of(const grad_check_case& c, scope& vars, const std::vector<tensor>& weights) {
  double l = 0;
  for (std::size_t k = 0; k < c.loss_outputs.size(); ++k) {
    auto out = vars.get("out." + var_name(c.loss_outputs[k], 0)).values<float>();
    auto w = weights[k].values<float>();
    for (std::size_t i = 0; i < out.size(); ++i) l += static_cast<double>(out[i]) * w[i];
  }
  return l;
}

struct worst_element {
  double error = 0;
  std::string where;
  double analytic = 0, numeric = 0;
};

worst_element compare(const grad_check_case& c) {
  scope vars;
  proto::OpDesc fwd = forward_op(c, vars);
  bound_op forward(fwd, vars, place::cpu(), 0);
  forward.run();

  // Out@GRAD = w for loss outputs, zeros for extra outputs.
  std::vector<tensor> weights;
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<float> weight(0.5f, 1.5f);
  for (const auto& slot : c.loss_outputs) {
    const tensor& out = vars.get("out." + var_name(slot, 0));
    tensor w(dtype::fp32, out.shape());
    for (float& x : w.values<float>()) x = weight(rng);
    vars.var(grad_name("out." + var_name(slot, 0))) = w;
    weights.push_back(w);
  }
  for (const auto& slot : c.extra_outputs) {
    const tensor& out = vars.get("out." + var_name(slot, 0));
    vars.var(grad_name("out." + var_name(slot, 0))) =
        tensor::zeros(out.type(), out.shape());
  }

  const op_schema* schema = op_registry::global().find(c.op_type);
  if (schema == nullptr || !schema->make_grad)
    throw error("op '" + c.op_type + "' has no registered gradient");
  int index = 1;
  for (const auto& g : schema->make_grad(fwd)) {
    bound_op(g, vars, place::cpu(), index++).run();
  }

  worst_element worst;
  const double delta = c.delta;
  for (const auto& slot : c.check_slots) {
    auto it = c.inputs.find(slot);
    if (it == c.inputs.end()) throw error("check slot '" + slot + "' is not an input");
    for (std::size_t t = 0; t < it->second.size(); ++t) {
      std::string name = var_name(slot, t);
      const tensor* g = vars.find(grad_name(name));
      if (g == nullptr || !g->initialized())
        throw error("the grad ops of '" + c.op_type + "' did not produce " + grad_name(name));
      tensor analytic = g->clone();
      tensor& x = vars.var(name);
      auto xs = x.values<float>();
      for (std::size_t i = 0; i < xs.size(); ++i) {
        float saved = xs[i];
        xs[i] = saved + c.delta;
        forward.run();
        double up = loss_of(c, vars, weights);
        xs[i] = saved - c.delta;
        forward.run();
        double down = loss_of(c, vars, weights);
        xs[i] = saved;
        double numeric = (up - down) / (2 * delta);
        double a = analytic.values<float>()[i];
        double scale = std::abs(numeric) < 1e-3 ? 1.0 : std::abs(numeric);
        double err = std::abs(a - numeric) / scale;
        if (err > worst.error || std::isnan(err)) {
          worst = {std::isnan(err) ? std::numeric_limits<double>::infinity() : err,
                   grad_name(name) + "[" + std::to_string(i) + "]", a, numeric};
        }
      }
    }
  }
  return worst;
}

} // namespace

::testing::AssertionResult gradient_matches(const grad_check_case& c, double max_error) {
  worst_element w;
  try {
    w = compare(c);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure()
           << "gradient check of " << c.op_type << " could not run: " << e.what();
  }
  if (w.error < max_error)
    return ::testing::AssertionSuccess() << c.op_type << " max relative error " << w.error;
  return ::testing::AssertionFailure()
         << c.op_type << ": relative error " << w.error << " >= " << max_error << " at "
         << w.where << " (analytic " << w.analytic << ", numeric " << w.numeric << ")";
}

tensor random_tensor(const shape_t& shape, std::uint64_t seed, float lo, float hi) {
  tensor t(dtype::fp32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (float& x : t.values<float>()) x = u(rng);
  return t;
}

tensor random_labels(const shape_t& shape, std::int64_t bound, std::uint64_t seed) {
  tensor t(dtype::int64, shape);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> u(0, bound - 1);
  for (auto& x : t.values<std::int64_t>()) x = u(rng);
  return t;
}

} // namespace pe::testing
