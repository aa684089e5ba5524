#pragma once

// The calling thread's oneDNN primitives, kept by what describes them. Internal to
// kernels/cpu (the oneDNN kernels and dnnl_context.cpp's reorders).
//
// Why: a kernel that builds its primitive descriptor on every call pays for oneDNN walking
// its list of implementations, each allocating while it checks whether it applies; oneDNN's
// own primitive cache is keyed by the descriptor, so it saves the code generation only. On
// the ResNet fixture (tests/data/paddle_resnet_small, batch 8, 2 places) malloc and free
// took about a fifth of the process's samples, more than the convolutions' jitted code.

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

namespace pe {

/// The numbers that identify a primitive: its kind, dims, strides, flags, memory layouts.
/// Two keys are equal when they hold the same numbers in the same order; a caller starts
/// each key with a tag of its own, so that entries of different primitives never meet.
class dnnl_key {
 public:
  explicit dnnl_key(std::int64_t tag) {
    values_.reserve(128); // a convolution's three descriptors and geometry: one allocation
    values_.push_back(tag);
  }

  dnnl_key& add(std::int64_t value) {
    values_.push_back(value);
    return *this;
  }
  /// The count first, so that [1, 2] + [3] and [1] + [2, 3] differ.
  dnnl_key& add(const std::vector<std::int64_t>& values);
  /// The float's bits (an epsilon, an alpha).
  dnnl_key& add_bits(float value);
  /// Everything that tells two descriptors apart: dims, data type, padding, offset, format
  /// kind and, for a blocked format, its strides and inner blocks.
  dnnl_key& add(const dnnl::memory::desc& md);

  bool operator==(const dnnl_key& other) const { return values_ == other.values_; }
  std::size_t hash() const;

 private:
  std::vector<std::int64_t> values_;
};

struct dnnl_key_hash {
  std::size_t operator()(const dnnl_key& key) const { return key.hash(); }
};

/// At most this many entries of one kind per thread; the next one starts the cache over (a
/// program has a few dozen distinct shapes; a stream of new shapes must not grow it forever).
constexpr std::size_t dnnl_cache_limit = 512;

/// A cached primitive and the descriptor it was made from (whose layouts a kernel reorders
/// its tensors to).
template <class Primitive>
struct dnnl_primitive_entry {
  typename Primitive::primitive_desc pd;
  Primitive primitive;
};

/// The OpenMP team size of the calling thread's oneDNN primitives, applied now
/// (dnnl_context.cpp: blas_threads()).
int dnnl_team_size();

/// The calling thread's entries of type `Entry` (dnnl_cached's). One map per entry type, not
/// per call of dnnl_cached: a thread_local there would be one per `make` (each lambda).
template <class Entry>
std::unordered_map<dnnl_key, Entry, dnnl_key_hash>& dnnl_entries() {
  thread_local std::unordered_map<dnnl_key, Entry, dnnl_key_hash> entries;
  return entries;
}

/// The calling thread's `Entry` for `key` (a copy: oneDNN's objects are handles), made by
/// `make()` the first time. Each thread keeps its own (the primitives belong to its engine,
/// and their OpenMP team size is the thread's, which the key records as well). When `make`
/// throws, nothing is kept.
template <class Entry, class Make>
Entry dnnl_cached(dnnl_key key, Make&& make) {
  auto& entries = dnnl_entries<Entry>();
  key.add(dnnl_team_size());
  if (auto it = entries.find(key); it != entries.end()) return it->second;
  Entry made = make();
  if (entries.size() >= dnnl_cache_limit) entries.clear();
  entries.emplace(std::move(key), made);
  return made;
}

} // namespace pe
