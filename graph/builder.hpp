#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/attribute.hpp"
#include "core/tensor.hpp"
#include "graph/op_role.hpp"
#include "graph/proto.hpp"

namespace pe {

/// Slot name -> variable names, as ops bind them.
using slot_args = std::vector<std::pair<std::string, std::vector<std::string>>>;

/// Builds programs the way Paddle's static-graph API does: layers append ops to the main
/// program and declare their outputs (dims from shape inference); parameters are declared in
/// both programs and initialised by ops appended to the startup program.
///
/// Names follow Paddle's scheme (fc_0.w_0, fc_0.tmp_1, mean_0.tmp_0), made unique against the
/// variables already declared, so a builder can extend a loaded program too.
class program_builder {
 public:
  /// Both programs get a block 0 if they have none. `seed` makes initialisation reproducible.
  program_builder(proto::ProgramDesc& main, proto::ProgramDesc& startup, std::uint64_t seed);

  proto::BlockDesc& main_block() { return *main_.mutable_blocks(0); }
  proto::BlockDesc& startup_block() { return *startup_.mutable_blocks(0); }

  /// A fed input variable ("data" in Paddle): not persistable, stop_gradient.
  std::string data(const std::string& name, shape_t dims, dtype type);

  /// A trainable parameter of `dims`, initialised Xavier-uniform (weights), to zero (biases)
  /// or to one (batch-norm scales). Fans as Paddle computes them: [in, out] for an fc
  /// weight, [out_channels, in_channels, kh, kw] for a conv filter.
  enum class init { xavier_uniform, zero, one };
  std::string parameter(const std::string& name, shape_t dims, init how);

  /// Fully connected layer: mul + elementwise_add, then `activation` (relu, tanh, sigmoid,
  /// or "" for none). Returns the output variable.
  std::string fc(const std::string& input, int size, const std::string& activation);

  /// conv2d of `input` [N, C, H, W] with `filters` square kernels of side `kernel`, no bias
  /// (a batch norm follows in the models that use it); "SAME"-style padding kernel / 2.
  std::string conv2d(const std::string& input, int filters, int kernel, int stride = 1);

  /// batch_norm over the channels of `input` (rank 2 or 4), then `activation` (as fc's).
  /// Scale and bias are parameters; the moving mean and variance are persistable state.
  std::string batch_norm(const std::string& input, const std::string& activation);

  /// pool2d ("max" or "avg") with a square window `kernel` and stride `stride`.
  std::string pool2d(const std::string& input, const std::string& type, int kernel, int stride);

  /// Returns {softmax, loss}.
  std::pair<std::string, std::string> softmax_with_cross_entropy(const std::string& logits,
                                                                 const std::string& label);
  std::string mean(const std::string& x);

  /// top_k(k) of `prediction` then accuracy against `label`; returns the accuracy variable.
  std::string accuracy(const std::string& prediction, const std::string& label, int k = 1);

  /// Appends an op to the main program with the given role. Output variables not declared
  /// yet are declared with the dtype and dims shape inference gives them.
  proto::OpDesc& append_op(const std::string& type, const slot_args& inputs,
                           const slot_args& outputs,
                           const std::vector<std::pair<std::string, attribute>>& attrs,
                           std::int32_t role = op_role::forward);

  /// "<prefix>_<k>" for the smallest k not yet used by this builder or the program.
  std::string unique_name(const std::string& prefix);

  /// Declares a variable in the main program (and, for persistable ones, the startup
  /// program); an existing declaration is returned unchanged.
  proto::VarDesc& declare(proto::BlockDesc& block, const std::string& name, dtype type,
                          const shape_t& dims, bool persistable);

  /// A persistable variable filled with `value` by the startup program.
  std::string constant_state(const std::string& name, shape_t dims, float value);

  std::uint64_t next_seed() { return seed_++; }

 private:
  proto::ProgramDesc& main_;
  proto::ProgramDesc& startup_;
  std::uint64_t seed_;
  std::map<std::string, int> counters_;
};

} // namespace pe
