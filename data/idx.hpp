#pragma once

#include <string>

#include "core/tensor.hpp"
#include "data/dataset.hpp"

namespace pe {

/// Reads an MNIST-format idx3 image file (magic 0x00000803, dims n, rows, cols, then uint8
/// pixels), plain or gzip-compressed, as FP32 [n, rows * cols]: pixel values 0..255, or
/// 0..1 when `normalize`. Throws pe::error naming the file on a missing or unreadable file,
/// a wrong magic number, empty dims or truncated data.
tensor read_idx_images(const std::string& path, bool normalize);

/// Reads an idx1 label file (magic 0x00000801, dim n, then uint8 labels), plain or gzip,
/// as INT64 [n, 1]. Errors as read_idx_images.
tensor read_idx_labels(const std::string& path);

/// Loads DIR/train-images-idx3-ubyte and DIR/train-labels-idx1-ubyte as the training set
/// (the feeds image_feed and label_feed) and, when both exist, the t10k-* pair as the test
/// set; each name may carry ".gz".
/// Throws pe::error when a training file is missing, only one t10k file exists, or image
/// and label counts differ.
data_splits load_idx_dir(const std::string& dir, bool normalize);

} // namespace pe
