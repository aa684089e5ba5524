#include "tests/fuzz/program_target.hpp"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/ssa_graph.hpp"
#include "graph/validate.hpp"
#include "tests/fuzz/program_mutator.hpp"

// libFuzzer's byte mutator; absent (null) when the target is linked with the replay main.
extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size)
    __attribute__((weak));

namespace pe::fuzz {

namespace {

/// Small enough that a program the limit admits cannot exhaust the fuzzer's memory, large
/// enough for every seed.
constexpr std::int64_t max_tensor_bytes = std::int64_t{64} << 20;

struct strategy_case {
  int places;
  build_strategy strategy;
};

std::vector<strategy_case> strategies() {
  auto with = [](auto edit) {
    build_strategy s;
    s.max_tensor_bytes = max_tensor_bytes;
    edit(s);
    return s;
  };
  using mode = build_strategy::reduce_mode;
  return {
      {1, with([](build_strategy&) {})},
      {2, with([](build_strategy& s) { s.fuse_all_reduce_bytes = 1 << 20; })},
      {3, with([](build_strategy& s) { s.reduce = mode::reduce; })},
      {2, with([](build_strategy& s) {
         s.reduce = mode::reduce;
         s.num_trainers = 2;
         s.trainer_id = 1;
       })},
      {2, with([](build_strategy& s) {
         s.num_trainers = 3;
         s.trainer_id = 2;
         s.fuse_all_reduce_bytes = 64 << 10;
         s.scale = build_strategy::gradient_scale::one;
       })},
  };
}

/// What a user would fetch: the outputs of the program's last op.
std::vector<std::string> fetches_of(const proto::ProgramDesc& program) {
  std::vector<std::string> names;
  const auto& block = program.blocks(0);
  if (block.ops_size() == 0) return names;
  for (const auto& slot : block.ops(block.ops_size() - 1).outputs())
    for (const auto& name : slot.arguments()) names.push_back(name);
  return names;
}

} // namespace

void run_program_input(const std::uint8_t* data, std::size_t size) {
  static const std::vector<strategy_case> cases = strategies();
  try {
    const proto::ProgramDesc program =
        parse_program(std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
    const var_table vars = validate_program(program, max_tensor_bytes);
    persistable_specs(program);
    forward_param_specs(program);
    const std::vector<std::string> fetches = fetches_of(program);
    for (const auto& c : cases) {
      const ssa_graph graph = build_ssa_graph(program, vars, c.places, c.strategy, {});
      build_ssa_graph(program, vars, c.places, c.strategy, fetches);
      to_dot(graph, program);
    }
  } catch (const error&) {
    // A refusal naming the problem: what hostile input must get.
  }
}

std::size_t mutate_program_input(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                 unsigned int seed, program_format format) {
  std::minstd_rand rng(seed);
  auto bytes_mutation = [&] { return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, max_size) : size; };
  proto::ProgramDesc program;
  try {
    program = parse_program(std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
  } catch (const error&) {
    return bytes_mutation();
  }
  // Mostly structural edits; now and then bytes, so that the parser itself is fuzzed too.
  if (rng() % 8 == 0) return bytes_mutation();
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < edits; ++i) mutate_program(program, rng);
  std::string out;
  try {
    out = serialize_program(program, format);
  } catch (const error&) {
    return bytes_mutation(); // a required field went unset
  }
  if (out.size() > max_size) return bytes_mutation();
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

} // namespace pe::fuzz
