#include "core/tensor.hpp"

#include <cstring>
#include <new>

#include "core/allocator.hpp"
#include "core/checked_math.hpp"
#include "core/host_allocator.hpp"
#include "core/selected_rows.hpp"

namespace pe {

std::string to_string(const shape_t& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::int64_t numel_of(const shape_t& shape) {
  auto n = checked_product(shape.begin(), shape.end());
  if (!n)
    throw error("tensor: the element count of shape " + to_string(shape) + " overflows int64");
  return *n;
}

namespace {

std::shared_ptr<std::byte> allocate(std::size_t bytes) {
  return host_allocator::instance().allocate(bytes);
}

/// The byte size of a `type` tensor of `shape`; throws for a negative dim or an overflow.
std::size_t checked_bytes(dtype type, const shape_t& shape) {
  for (auto d : shape)
    if (d < 0) throw error("tensor: negative dimension in shape " + to_string(shape));
  auto bytes = checked_mul(numel_of(shape), static_cast<std::int64_t>(size_of(type)));
  if (!bytes)
    throw error("tensor: the byte size of shape " + to_string(shape) + " overflows int64");
  return static_cast<std::size_t>(*bytes);
}

} // namespace

tensor::tensor(dtype type, shape_t shape, place where)
    : type_(type), shape_(std::move(shape)), numel_(numel_of(shape_)), place_(where) {
  if (place_.type != place::kind::cpu)
    throw error("tensor: host allocation requested for " + pe::to_string(place_));
  capacity_ = checked_bytes(type_, shape_);
  storage_ = allocate(capacity_);
}

tensor::tensor(dtype type, shape_t shape, place where, allocator& memory)
    : type_(type), shape_(std::move(shape)), numel_(numel_of(shape_)), place_(where) {
  capacity_ = checked_bytes(type_, shape_);
  storage_ = memory.allocate(capacity_);
}

tensor tensor::zeros(dtype type, shape_t shape, place where) {
  tensor t(type, std::move(shape), where);
  std::memset(t.raw(), 0, t.bytes());
  return t;
}

void tensor::resize(dtype type, shape_t shape) {
  std::size_t needed = checked_bytes(type, shape);
  type_ = type;
  shape_ = std::move(shape);
  numel_ = numel_of(shape_);
  sparse_rows_.reset();
  if (!storage_ || needed > capacity_) {
    storage_ = allocate(needed);
    capacity_ = needed;
  }
}

void tensor::resize(dtype type, shape_t shape, place where, allocator& memory) {
  std::size_t needed = checked_bytes(type, shape);
  type_ = type;
  shape_ = std::move(shape);
  numel_ = numel_of(shape_);
  sparse_rows_.reset();
  if (!storage_ || needed > capacity_ || !(place_ == where)) {
    storage_ = memory.allocate(needed);
    capacity_ = needed;
  }
  place_ = where;
}

tensor tensor::slice(std::int64_t begin, std::int64_t end) const {
  if (shape_.empty())
    throw error("tensor::slice: cannot slice a scalar");
  if (begin < 0 || end < begin || end > shape_[0])
    throw error("tensor::slice: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") out of range for shape " + to_string(shape_));
  tensor t = *this;
  std::size_t row_bytes = shape_[0] == 0 ? 0 : bytes() / static_cast<std::size_t>(shape_[0]);
  std::size_t offset = static_cast<std::size_t>(begin) * row_bytes;
  t.storage_ = std::shared_ptr<std::byte>(storage_, storage_.get() + offset);
  t.shape_[0] = end - begin;
  t.numel_ = numel_of(t.shape_);
  t.capacity_ = t.bytes();
  t.sparse_rows_.reset();
  return t;
}

tensor tensor::clone() const {
  tensor t;
  t.copy_from(*this);
  return t;
}

void tensor::copy_from(const tensor& other) {
  if (!other.initialized()) throw error("tensor::copy_from: source is uninitialised");
  if (other.storage_ == storage_ && other.shape_ == shape_ && other.type_ == type_) {
    sparse_rows_ = other.sparse_rows_;
    return;
  }
  if (other.place_.type != place::kind::cpu || (storage_ && place_.type != place::kind::cpu))
    throw error("tensor::copy_from: a host copy cannot reach the memory of " +
                pe::to_string(other.place_.type != place::kind::cpu ? other.place_ : place_) +
                " (copy through its device)");
  resize(other.type_, other.shape_);
  place_ = other.place_;
  std::memcpy(raw(), other.raw(), other.bytes());
  sparse_rows_ = other.sparse_rows_;
}

void tensor::set_sparse_rows(std::shared_ptr<const selected_rows> rows) {
  if (rows && (rank() != 2 || static_cast<std::size_t>(shape_[0]) != rows->rows().size()))
    throw error("tensor::set_sparse_rows: " + std::to_string(rows->rows().size()) +
                " rows for a value of shape " + to_string(shape_) + " (want [rows, width])");
  sparse_rows_ = std::move(rows);
}

void tensor::check_access(dtype requested) const {
  if (!storage_) throw error("tensor: access to an uninitialised tensor");
  if (requested != type_)
    throw error("tensor: element type " + pe::to_string(requested) + " requested from a " +
                pe::to_string(type_) + " tensor");
}

} // namespace pe
