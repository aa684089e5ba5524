#include "data/dataset.hpp"

#include "core/error.hpp"
#include "data/idx.hpp"
#include "data/npy_dir.hpp"
#include "data/synthetic.hpp"

namespace pe {

data_splits load_data(const std::string& spec, std::uint64_t seed, bool normalize,
                      const feed_names& feeds) {
  if (spec == "synthetic")
    return make_synthetic({.seed = seed});
  if (spec.starts_with("idx:"))
    return load_idx_dir(spec.substr(4), normalize);
  if (spec.starts_with("npy:"))
    return load_npy_dir(spec.substr(4), feeds);
  throw error("unknown data source '" + spec + "' (synthetic, idx:DIR or npy:DIR)");
}

} // namespace pe
