#include "data/npy_dir.hpp"

#include <filesystem>

#include "core/error.hpp"
#include "data/npy.hpp"

namespace pe {

namespace {

dataset read_split(const std::string& dir, const feed_names& feeds, bool test) {
  dataset d{read_npy_feed(dir, feeds.image, test), read_npy_feed(dir, feeds.label, test)};
  if (d.images.dim(0) != d.labels.dim(0))
    throw error(npy_feed_file(dir, feeds.image, test) + " has " +
                std::to_string(d.images.dim(0)) + " rows but " +
                npy_feed_file(dir, feeds.label, test) + " has " +
                std::to_string(d.labels.dim(0)));
  return d;
}

} // namespace

std::string npy_feed_file(const std::string& dir, const std::string& name, bool test) {
  auto root = std::filesystem::path(dir);
  return ((test ? root / "test" : root) / (name + ".npy")).string();
}

tensor read_npy_feed(const std::string& dir, const std::string& name, bool test) {
  auto path = npy_feed_file(dir, name, test);
  if (!std::filesystem::exists(path))
    throw error("npy:" + dir + ": missing " + path + " for feed '" + name + "'");
  auto t = read_npy(path);
  if (t.rank() == 0)
    throw error(path + ": feed '" + name + "' is a scalar; it needs its samples along dim 0");
  if (t.dim(0) == 0)
    throw error(path + ": feed '" + name + "' has no rows");
  return t;
}

data_splits load_npy_dir(const std::string& dir, const feed_names& feeds) {
  if (!std::filesystem::is_directory(dir))
    throw error("npy:" + dir + ": not a directory");
  data_splits splits{read_split(dir, feeds, false), std::nullopt};
  if (std::filesystem::is_directory(std::filesystem::path(dir) / "test"))
    splits.test = read_split(dir, feeds, true);
  return splits;
}

} // namespace pe
