#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/proto.hpp"

namespace pe {

/// A variable each run must feed: a non-persistable tensor read before any op writes it,
/// or the output of a feed op.
struct data_input {
  std::string name;
  int first_reader;        ///< index of the first op that reads (or feeds) it
  std::string reader_type; ///< that op's type, for error messages
};

/// The data inputs of block 0, in order of first use.
std::vector<data_input> data_inputs(const proto::ProgramDesc& program);

/// What a driver needs to know about a loaded training program.
struct program_roles {
  std::vector<std::string> feeds; ///< the data inputs' names
  std::string loss;               ///< the var whose @GRAD is seeded (op_role Backward|Loss); "" if none
  std::string softmax;            ///< Softmax output of softmax_with_cross_entropy; "" if none
  std::string label;              ///< Label input of that softmax_with_cross_entropy; "" if none
  std::string accuracy;           ///< Accuracy output of an accuracy op; "" if none
};

program_roles analyze_program(const proto::ProgramDesc& main);

/// The forward part of a training program (ops with op_role Forward only), as Paddle's
/// clone(for_test=True): ops with an `is_test` attribute get it set. When it has no accuracy op but a softmax_with_cross_entropy, top_k
/// and accuracy ops are appended on its Softmax output and `label`.
proto::ProgramDesc clone_for_test(const proto::ProgramDesc& main, const std::string& label);

/// Gives every random op (uniform_random, gaussian_random, dropout) with seed 0 a fixed seed
/// derived from `seed` and its position, so a loaded startup program initialises, and a
/// loaded main program draws its dropout masks, reproducibly.
void assign_seeds(proto::ProgramDesc& startup, std::uint64_t seed);

} // namespace pe
