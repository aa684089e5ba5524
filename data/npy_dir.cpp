#include "data/npy_dir.hpp"

#include <filesystem>

#include "core/error.hpp"
#include "data/npy.hpp"

namespace pe {

namespace {

/// Whether `c` stands for itself in a feed's file name.
bool file_name_safe(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-' || c == '.' || c == '@';
}

} // namespace

std::string npy_file_name(const std::string& name) {
  constexpr char hex[] = "0123456789ABCDEF";
  std::string file;
  for (unsigned char c : name) {
    if (file_name_safe(c)) {
      file += static_cast<char>(c);
    } else {
      file += '%';
      file += hex[c >> 4];
      file += hex[c & 0xf];
    }
  }
  return file + ".npy";
}

std::string npy_feed_file(const std::string& dir, const std::string& name, bool test) {
  auto root = std::filesystem::path(dir);
  return ((test ? root / "test" : root) / npy_file_name(name)).string();
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

dataset read_npy_split(const std::string& dir, const std::vector<std::string>& feeds, bool test) {
  std::vector<data_feed> read;
  for (const auto& name : feeds)
    read.push_back({name, read_npy_feed(dir, name, test)});
  return dataset(std::move(read),
                 [&](const std::string& name) { return npy_feed_file(dir, name, test); });
}

data_splits load_npy_dir(const std::string& dir, const std::vector<std::string>& feeds) {
  if (!std::filesystem::is_directory(dir))
    throw error("npy:" + dir + ": not a directory");
  data_splits splits{read_npy_split(dir, feeds, false), std::nullopt};
  if (std::filesystem::is_directory(std::filesystem::path(dir) / "test"))
    splits.test = read_npy_split(dir, feeds, true);
  return splits;
}

} // namespace pe
