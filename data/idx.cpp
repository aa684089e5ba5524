#include "data/idx.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include <zlib.h>

#include "core/checked_math.hpp"
#include "core/error.hpp"

namespace pe {

namespace {

constexpr std::uint32_t images_magic = 0x00000803;
constexpr std::uint32_t labels_magic = 0x00000801;

/// A file read through zlib, which passes plain files through unchanged.
class idx_reader {
 public:
  explicit idx_reader(std::string path)
    : path_(std::move(path)), file_(gzopen(path_.c_str(), "rb")) {
    if (!file_)
      throw error(path_ + ": cannot open for reading");
  }

  /// Fills `out` completely; `what` names the part for the truncation message.
  void read(std::uint8_t* out, std::size_t size, const char* what) {
    std::size_t done = 0;
    while (done < size) done += read_some(out + done, size - done, what, done, size);
  }

  /// `size` bytes, read in chunks that grow the buffer only as data arrives: the header's
  /// sizes never size an allocation by themselves (a compressed file cannot be checked
  /// against its length beforehand, and a lying header must not exhaust memory).
  std::vector<std::uint8_t> read_bytes(std::size_t size, const char* what) {
    constexpr std::size_t chunk = std::size_t{16} << 20;
    std::vector<std::uint8_t> bytes;
    while (bytes.size() < size) {
      const std::size_t done = bytes.size();
      bytes.resize(done + std::min(chunk, size - done));
      std::size_t filled = done;
      while (filled < bytes.size())
        filled += read_some(bytes.data() + filled, bytes.size() - filled, what, filled, size);
    }
    return bytes;
  }

  std::uint32_t read_u32(const char* what) {
    std::array<std::uint8_t, 4> b{};
    read(b.data(), b.size(), what);
    return std::uint32_t{b[0]} << 24 | std::uint32_t{b[1]} << 16 | std::uint32_t{b[2]} << 8 | b[3];
  }

  /// Reads the magic number and `rank` dims, checking both.
  std::vector<std::int64_t> read_header(std::uint32_t magic, int rank) {
    auto found = read_u32("the magic number");
    if (found != magic)
      throw error(path_ + ": bad magic number " + hex(found) + ", expected " + hex(magic) +
                  " (not an idx" + std::to_string(rank) + " file)");
    std::vector<std::int64_t> dims;
    for (int i = 0; i < rank; ++i) {
      dims.push_back(read_u32("the header"));
      if (dims.back() == 0)
        throw error(path_ + ": dimension " + std::to_string(i) + " is 0");
    }
    return dims;
  }

 private:
  /// Up to `size` bytes into `out` (at least one); throws on a read error and, naming the
  /// `needed` bytes of `what` and the `done` ones found, at the end of the file.
  std::size_t read_some(std::uint8_t* out, std::size_t size, const char* what, std::size_t done,
                        std::size_t needed) {
    const auto chunk = static_cast<unsigned>(std::min<std::size_t>(size, 1u << 30));
    const int got = gzread(file_.get(), out, chunk);
    if (got < 0) {
      int code = 0;
      throw error(path_ + ": read error: " + gzerror(file_.get(), &code));
    }
    if (got == 0)
      throw error(path_ + ": truncated: " + what + " needs " + std::to_string(needed) +
                  " bytes, file has " + std::to_string(done));
    return static_cast<std::size_t>(got);
  }

  static std::string hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
  }

  struct closer {
    void operator()(gzFile f) const { gzclose(f); }
  };

  std::string path_;
  std::unique_ptr<gzFile_s, closer> file_;
};

/// DIR/name, or DIR/name.gz when only that exists; nullopt when neither does.
std::optional<std::string> find_file(const std::filesystem::path& dir, const std::string& name) {
  for (const auto& candidate : {dir / name, dir / (name + ".gz")})
    if (std::filesystem::exists(candidate))
      return candidate.string();
  return std::nullopt;
}

/// The image and label feeds of an idx image file and its label file.
dataset load_pair(const std::string& images_path, const std::string& labels_path, bool normalize) {
  tensor images = read_idx_images(images_path, normalize), labels = read_idx_labels(labels_path);
  if (images.dim(0) != labels.dim(0))
    throw error(images_path + " has " + std::to_string(images.dim(0)) + " images but " +
                labels_path + " has " + std::to_string(labels.dim(0)) + " labels");
  return dataset({{image_feed, std::move(images)}, {label_feed, std::move(labels)}});
}

} // namespace

tensor read_idx_images(const std::string& path, bool normalize) {
  idx_reader in(path);
  auto dims = in.read_header(images_magic, 3);
  const std::int64_t count = dims[0];
  // Each dim is below 2^32, so even rows * cols may overflow.
  const auto width = checked_mul(dims[1], dims[2]);
  const auto pixel_count = width ? checked_mul(count, *width) : std::nullopt;
  if (!pixel_count || *pixel_count > std::numeric_limits<std::int64_t>::max() / 4)
    throw error(path + ": " + std::to_string(count) + " images of " + std::to_string(dims[1]) +
                "x" + std::to_string(dims[2]) + " pixels are too many to address");
  const std::vector<std::uint8_t> pixels =
      in.read_bytes(static_cast<std::size_t>(*pixel_count), "the pixel data");
  tensor images(dtype::fp32, {count, *width});
  float scale = normalize ? 1.f / 255.f : 1.f;
  auto out = images.values<float>();
  for (std::size_t i = 0; i < pixels.size(); ++i)
    out[i] = static_cast<float>(pixels[i]) * scale;
  return images;
}

tensor read_idx_labels(const std::string& path) {
  idx_reader in(path);
  auto count = in.read_header(labels_magic, 1)[0];
  const std::vector<std::uint8_t> bytes = in.read_bytes(static_cast<std::size_t>(count), "the label data");
  return tensor::from_vector(std::vector<std::int64_t>(bytes.begin(), bytes.end()), {count, 1});
}

data_splits load_idx_dir(const std::string& dir, bool normalize) {
  const std::filesystem::path root(dir);
  if (!std::filesystem::is_directory(root))
    throw error("idx:" + dir + ": not a directory");
  auto require = [&](const std::string& name) {
    auto path = find_file(root, name);
    if (!path)
      throw error((root / name).string() + "[.gz]: no such file");
    return *path;
  };
  auto train_images = require("train-images-idx3-ubyte");
  auto train_labels = require("train-labels-idx1-ubyte");
  data_splits splits{load_pair(train_images, train_labels, normalize), std::nullopt};
  auto test_images = find_file(root, "t10k-images-idx3-ubyte");
  auto test_labels = find_file(root, "t10k-labels-idx1-ubyte");
  if (test_images && test_labels)
    splits.test = load_pair(*test_images, *test_labels, normalize);
  else if (test_images || test_labels)
    throw error("idx:" + dir + ": has " + (test_images ? *test_images : *test_labels) +
                " but not its t10k " + (test_images ? "labels" : "images") + " file");
  return splits;
}

} // namespace pe
