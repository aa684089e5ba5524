#include "tests/support/test_gate.hpp"

#include <string>

#include <gtest/gtest.h>

#include "graph/op_registry.hpp"
#include "kernels/kernel.hpp"
#include "tests/support/batches.hpp"

namespace pe::testing {

namespace {

/// Registers test_gate (X -> Out, a copy) before any program is read.
const bool gate_registered = [] {
  op_registry::extend([](op_registry& r) {
    r.add({.type = "test_gate",
           .inputs = {{"X"}},
           .outputs = {{"Out"}},
           .infer_shape = [](shape_context& c) { c.set_output("Out", 0, c.input_dims("X"), c.input_dtype("X")); }});
  });
  kernel_registry::extend([](kernel_registry& r) {
    r.add("test_gate", place::kind::cpu, [](kernel_context& c) {
      gate().pass(c.where().index);
      c.output("Out").copy_from(c.input("X"));
    });
  });
  return true;
}();

} // namespace

gate_control& gate() {
  static gate_control g;
  return g;
}

model_programs gated_mlp(int gates) {
  model_programs m = argmax_mlp("sgd", 0.1f);
  proto::BlockDesc& block = *m.main.mutable_blocks(0);
  const proto::VarDesc* image = nullptr;
  for (const auto& v : block.vars())
    if (v.name() == m.image) image = &v;
  EXPECT_NE(image, nullptr);
  const proto::VarDesc image_desc = *image;
  std::string from = m.image;
  for (int g = 0; g < gates; ++g) {
    const std::string to = "gated_image_" + std::to_string(g);
    proto::VarDesc& v = *block.add_vars();
    v = image_desc;
    v.set_name(to);
    v.set_persistable(false);
    proto::OpDesc& op = *block.add_ops();
    op.set_type("test_gate");
    auto* in = op.add_inputs();
    in->set_parameter("X");
    in->add_arguments(from);
    auto* out = op.add_outputs();
    out->set_parameter("Out");
    out->add_arguments(to);
    // Moved to position g: the gates run before every op of the model.
    for (int k = block.ops_size() - 1; k > g; --k) block.mutable_ops()->SwapElements(k, k - 1);
    from = to;
  }
  for (int k = gates; k < block.ops_size(); ++k)
    for (auto& slot : *block.mutable_ops(k)->mutable_inputs())
      for (auto& arg : *slot.mutable_arguments())
        if (arg == m.image) arg = from;
  return m;
}


} // namespace pe::testing
