#pragma once

#include <cstddef>
#include <cstdint>

#include "graph/program_io.hpp"

namespace pe::fuzz {

/// The program targets' body: parses the bytes (binary or text ProgramDesc, detected as the
/// CLI does), validates block 0, lists its parameters as the parameter loader does, and
/// builds the SSA graph under several strategies (1 to 3 places, all-reduce with and
/// without fused buckets, reduce mode, several processes) with fetches, then its DOT.
/// pe::error is the expected refusal; anything else escapes and is a finding.
void run_program_input(const std::uint8_t* data, std::size_t size);

/// LLVMFuzzerCustomMutator's body: parses the input, applies mutate_program a few times
/// and writes it back in `format`; falls back to libFuzzer's byte mutation when the input
/// does not parse or the result does not fit in `max_size`.
std::size_t mutate_program_input(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                 unsigned int seed, program_format format);

} // namespace pe::fuzz
