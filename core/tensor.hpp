#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/place.hpp"

namespace pe {

class allocator;
class selected_rows;

using shape_t = std::vector<std::int64_t>;

/// "[64, 784]".
std::string to_string(const shape_t& shape);

/// Product of the dimensions (1 for a scalar shape []). Throws pe::error when it overflows
/// int64.
std::int64_t numel_of(const shape_t& shape);

/// A dense, row-major n-d array on a place.
///
/// Copying a tensor is cheap and shares its storage (like a shared_ptr); `clone()`
/// makes a deep copy. A tensor either owns its buffer or views part of another
/// tensor's buffer (`slice`), which keeps that buffer alive.
class tensor {
 public:
  /// An uninitialised tensor: no dtype, no storage.
  tensor() = default;

  /// Allocates an uninitialised buffer for `shape` elements of `type`.
  tensor(dtype type, shape_t shape, place where = place::cpu());

  /// Allocates an uninitialised buffer from `memory`, the allocator of place `where` (a
  /// device's memory(): on a GPU place raw() is then a device pointer, for kernels and
  /// copies only; host code must not read it).
  tensor(dtype type, shape_t shape, place where, allocator& memory);

  /// A tensor filled with zeros.
  static tensor zeros(dtype type, shape_t shape, place where = place::cpu());

  /// A tensor holding a copy of `values` with the given shape (numel must match).
  template <class T>
  static tensor from_vector(const std::vector<T>& values, shape_t shape) {
    tensor t(dtype_of<T>(), std::move(shape));
    if (static_cast<std::size_t>(t.numel()) != values.size())
      throw error("tensor::from_vector: " + std::to_string(values.size()) +
                  " values for shape " + to_string(t.shape()));
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }

  /// Gives this tensor `shape` and `type`, keeping its buffer when it is large enough
  /// (like Paddle's mutable_data). Contents are unspecified afterwards, and the tensor is
  /// dense (no sparse_rows): whoever writes a SELECTED_ROWS value sets them after.
  void resize(dtype type, shape_t shape);

  /// Like resize, on place `where`: a buffer too small or of another place is replaced by
  /// one from `memory` (that place's allocator).
  void resize(dtype type, shape_t shape, place where, allocator& memory);

  /// Rows [begin, end) along dim 0, sharing this tensor's storage.
  tensor slice(std::int64_t begin, std::int64_t end) const;

  /// A deep copy with its own buffer.
  tensor clone() const;

  /// Copies `other`'s shape, dtype and contents into this tensor's (possibly reused) buffer.
  void copy_from(const tensor& other);

  bool initialized() const { return static_cast<bool>(storage_); }
  dtype type() const { return type_; }
  const shape_t& shape() const { return shape_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t rank() const { return shape_.size(); }
  std::int64_t numel() const { return numel_; }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * size_of(type_); }
  place where() const { return place_; }

  /// Typed element pointer; throws pe::error when T does not match the dtype or the
  /// tensor is uninitialised.
  template <class T>
  T* data() {
    check_access(dtype_of<T>());
    return reinterpret_cast<T*>(raw());
  }
  template <class T>
  const T* data() const {
    check_access(dtype_of<T>());
    return reinterpret_cast<const T*>(raw());
  }

  /// Typed view of all elements.
  template <class T>
  std::span<T> values() {
    return {data<T>(), static_cast<std::size_t>(numel())};
  }
  template <class T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<std::size_t>(numel())};
  }

  /// The row index when this tensor is the value of a SELECTED_ROWS variable (a [rows,
  /// width] value of a [height, width] table); null for a dense tensor. Copies, clone and
  /// copy_from keep it; resize and slice make the tensor dense.
  const std::shared_ptr<const selected_rows>& sparse_rows() const { return sparse_rows_; }

  /// Makes this tensor (a rank-2 value, one row per entry of `rows`) a SELECTED_ROWS value;
  /// throws pe::error when the row counts disagree. Null makes it dense again.
  void set_sparse_rows(std::shared_ptr<const selected_rows> rows);

  void* raw() { return storage_.get(); }
  const void* raw() const { return storage_.get(); }

 private:
  void check_access(dtype requested) const;

  std::shared_ptr<std::byte> storage_;
  std::size_t capacity_ = 0; // bytes reachable from storage_
  dtype type_ = dtype::fp32;
  shape_t shape_;
  std::int64_t numel_ = 1; // of shape_, kept with it: kernels ask in their inner loops
  place place_;
  std::shared_ptr<const selected_rows> sparse_rows_; // SELECTED_ROWS values only
};

} // namespace pe
