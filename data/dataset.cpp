#include "data/dataset.hpp"

#include "core/error.hpp"

namespace pe {

dataset::dataset(std::vector<data_feed> feeds, const describer& describe) : feeds_(std::move(feeds)) {
  const auto named = [&](const std::string& name) {
    return describe ? describe(name) : "feed '" + name + "'";
  };
  for (std::size_t i = 0; i < feeds_.size(); ++i) {
    const data_feed& f = feeds_[i];
    if (!f.rows.initialized())
      throw error(named(f.name) + " has no data");
    if (f.rows.rank() == 0)
      throw error(named(f.name) + " is a scalar; a feed needs its samples along dim 0");
    for (std::size_t j = 0; j < i; ++j) {
      if (feeds_[j].name == f.name)
        throw error(named(f.name) + " is given twice");
      if (feeds_[j].rows.dim(0) != f.rows.dim(0))
        throw error(named(feeds_[j].name) + " has " + std::to_string(feeds_[j].rows.dim(0)) +
                    " rows but " + named(f.name) + " has " + std::to_string(f.rows.dim(0)));
    }
  }
}

const tensor* dataset::find(const std::string& name) const {
  for (const auto& f : feeds_)
    if (f.name == name)
      return &f.rows;
  return nullptr;
}

const tensor& dataset::at(const std::string& name) const {
  if (const tensor* rows = find(name))
    return *rows;
  std::string have;
  for (const auto& f : feeds_)
    have += (have.empty() ? "'" : ", '") + f.name + "'";
  throw error("the data has no feed '" + name + "' (it has " + (have.empty() ? "none" : have) + ")");
}

std::int64_t dataset::width(const std::string& name) const {
  const tensor& rows = at(name);
  return rows.dim(0) == 0 ? 0 : rows.numel() / rows.dim(0);
}

dataset dataset::slice(std::int64_t begin, std::int64_t end) const {
  dataset out;
  out.feeds_.reserve(feeds_.size());
  for (const auto& f : feeds_)
    out.feeds_.push_back({f.name, f.rows.slice(begin, end)});
  return out;
}

} // namespace pe
