// Fuzz target: Paddle parameter files, one variable or combined, against what a program
// declares. The first byte chooses the declared variables (param_specs.hpp); the rest is
// the file.
#include <string>
#include <vector>

#include "core/error.hpp"
#include "graph/exec/param_files.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/fuzz/param_specs.hpp"

namespace {

/// A tensor the reader accepted has the declared dtype and every known dim.
void check_matches(const pe::tensor& t, const pe::param_spec& spec) {
  pe::fuzz::require(t.type() == spec.type, "dtype differs from the declared one");
  pe::fuzz::require(t.rank() == spec.dims.size(), "rank differs from the declared one");
  for (std::size_t i = 0; i < spec.dims.size(); ++i)
    pe::fuzz::require(spec.dims[i] == -1 || t.dim(i) == spec.dims[i], "a dim differs from the declared one");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t choice = data[0];
  const pe::param_spec a = pe::fuzz::declared_param(choice >> 1 & 7, "a");
  const pe::param_spec b = pe::fuzz::declared_param(choice >> 4 & 7, "b");
  const std::string& path = pe::fuzz::write_scratch(data + 1, size - 1);
  try {
    if (!(choice & 1)) {
      check_matches(pe::read_param_file(path, a), a);
      return 0;
    }
    const pe::param_map values = pe::read_combined_params(path, {{a}, {a, b}});
    pe::fuzz::require(values.size() == 1 || values.size() == 2, "a combined file gave another variable count");
    check_matches(values.at("a"), a);
    if (values.size() == 2) check_matches(values.at("b"), b);
  } catch (const pe::error&) {
  }
  return 0;
}
