// Fuzz targets program_binary and program_text: a ProgramDesc through the loader, validation
// and the SSA graph builder, mutated structurally (program_mutator) and as bytes. One source
// for both: PE_PROGRAM_FORMAT (binary or text, defined in CMakeLists.txt) is the format the
// mutator writes its results in.
#include "tests/fuzz/program_target.hpp"

#ifndef PE_PROGRAM_FORMAT
#error "define PE_PROGRAM_FORMAT as binary or text: the format the mutator writes"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pe::fuzz::run_program_input(data, size);
  return 0;
}

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  return pe::fuzz::mutate_program_input(data, size, max_size, seed,
                                        pe::program_format::PE_PROGRAM_FORMAT);
}
