// Fuzz target: the idx image and label readers (plain and gzip). The first byte chooses
// images or labels and normalisation; the rest is the file.
#include <cstdint>

#include "core/error.hpp"
#include "data/idx.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  const std::string& path = pe::fuzz::write_scratch(data + 1, size - 1);
  try {
    if (mode & 1) {
      const pe::tensor labels = pe::read_idx_labels(path);
      pe::fuzz::require(labels.rank() == 2 && labels.dim(1) == 1 && labels.type() == pe::dtype::int64,
                        "labels are not INT64 [n, 1]");
      for (const auto label : labels.values<std::int64_t>())
        pe::fuzz::require(label >= 0 && label < 256, "a label is not a byte");
    } else {
      const bool normalize = mode & 2;
      const pe::tensor images = pe::read_idx_images(path, normalize);
      pe::fuzz::require(images.rank() == 2 && images.type() == pe::dtype::fp32, "images are not FP32 [n, pixels]");
      for (const float v : images.values<float>())
        pe::fuzz::require(v >= 0.f && v <= (normalize ? 1.f : 255.f), "a pixel is out of range");
    }
  } catch (const pe::error&) {
  }
  return 0;
}
