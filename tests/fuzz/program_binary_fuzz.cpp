// Fuzz target: a binary ProgramDesc through the loader, validation and the SSA graph builder,
// mutated structurally (program_mutator) and as bytes.
#include "tests/fuzz/program_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pe::fuzz::run_program_input(data, size);
  return 0;
}

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  return pe::fuzz::mutate_program_input(data, size, max_size, seed, pe::program_format::binary);
}
