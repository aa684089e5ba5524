#include "kernels/cpu/dnnl_cache.hpp"

#include <cstring>

namespace pe {

dnnl_key& dnnl_key::add(const std::vector<std::int64_t>& values) {
  values_.push_back(static_cast<std::int64_t>(values.size()));
  values_.insert(values_.end(), values.begin(), values.end());
  return *this;
}

dnnl_key& dnnl_key::add_bits(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return add(static_cast<std::int64_t>(bits));
}

dnnl_key& dnnl_key::add(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  add(d.ndims).add(d.data_type).add(d.offset0).add(d.format_kind);
  for (int i = 0; i < d.ndims; ++i) add(d.dims[i]).add(d.padded_dims[i]).add(d.padded_offsets[i]);
  if (d.format_kind == dnnl_blocked) {
    const dnnl_blocking_desc_t& b = d.format_desc.blocking;
    for (int i = 0; i < d.ndims; ++i) add(b.strides[i]);
    add(b.inner_nblks);
    for (int i = 0; i < b.inner_nblks; ++i) add(b.inner_blks[i]).add(b.inner_idxs[i]);
  }
  add(static_cast<std::int64_t>(d.extra.flags));
  if (d.extra.flags != 0) add(d.extra.compensation_mask).add(d.extra.scale_adjust);
  return *this;
}

std::size_t dnnl_key::hash() const {
  std::uint64_t h = 1469598103934665603ull; // FNV-1a over the values
  for (std::int64_t v : values_) {
    h ^= static_cast<std::uint64_t>(v);
    h *= 1099511628211ull;
  }
  return static_cast<std::size_t>(h);
}

} // namespace pe
