#include "apps/dataset.hpp"

#include "apps/idx.hpp"
#include "apps/synthetic.hpp"
#include "devices/error.hpp"

namespace pe {

data_splits load_data(const std::string& spec, std::uint64_t seed, bool normalize) {
  if (spec == "synthetic")
    return make_synthetic({.seed = seed});
  if (spec.starts_with("idx:"))
    return load_idx_dir(spec.substr(4), normalize);
  throw error("unknown data source '" + spec + "' (synthetic or idx:DIR)");
}

} // namespace pe
