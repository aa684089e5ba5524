// Fuzz target: the .npy reader. What it accepts must write back and read again to the same
// dtype, shape and bytes.
#include <cstring>

#include "core/error.hpp"
#include "data/npy.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = pe::fuzz::write_scratch(data, size, ".npy");
  pe::tensor first;
  try {
    first = pe::read_npy(path);
  } catch (const pe::error&) {
    return 0;
  }
  const std::string& copy = pe::fuzz::scratch_path(".copy.npy");
  pe::write_npy(copy, first);
  const pe::tensor second = pe::read_npy(copy);
  pe::fuzz::require(second.type() == first.type() && second.shape() == first.shape(),
                    "a written .npy reads back with another dtype or shape");
  pe::fuzz::require(second.bytes() == first.bytes() &&
                        (first.bytes() == 0 || std::memcmp(second.raw(), first.raw(), first.bytes()) == 0),
                    "a written .npy reads back with other values");
  return 0;
}
