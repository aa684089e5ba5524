#pragma once

// Test helpers shared by dataset_test and cli_test: a scratch directory and tiny
// MNIST-format idx files, plain or gzip-compressed.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>
#include <zlib.h>

namespace pe::testing {

/// A fresh directory under the system temp dir, removed with its contents on destruction.
class temp_dir {
 public:
  explicit temp_dir(const std::string& name)
    : path_(std::filesystem::temp_directory_path() /
            ("pe_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() { std::filesystem::remove_all(path_); }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// An idx header: the big-endian magic number and dims.
inline std::string idx_header(std::uint32_t magic, const std::vector<std::uint32_t>& dims) {
  std::string bytes;
  auto put = [&](std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<char>((v >> shift) & 0xff));
  };
  put(magic);
  for (auto d : dims)
    put(d);
  return bytes;
}

/// An idx3 image file's bytes: `count` images of rows x cols, pixels in row-major order.
inline std::string idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                              const std::vector<std::uint8_t>& pixels) {
  return idx_header(0x00000803, {count, rows, cols}) + std::string(pixels.begin(), pixels.end());
}

/// An idx1 label file's bytes.
inline std::string idx_labels(const std::vector<std::uint8_t>& labels) {
  return idx_header(0x00000801, {static_cast<std::uint32_t>(labels.size())}) +
         std::string(labels.begin(), labels.end());
}

/// Writes `bytes` to `path`, gzip-compressed when `gzip`.
inline void write_file(const std::string& path, const std::string& bytes, bool gzip = false) {
  if (!gzip) {
    std::ofstream(path, std::ios::binary) << bytes;
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f || gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) !=
              static_cast<int>(bytes.size()))
    throw std::runtime_error("cannot write " + path);
  gzclose(f);
}

} // namespace pe::testing
