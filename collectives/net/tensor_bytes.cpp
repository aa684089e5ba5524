#include "collectives/net/tensor_bytes.hpp"

#include <cstdint>
#include <cstring>

namespace pe {

namespace {

template <class T>
void put(byte_buffer& out, T value) {
  append_bytes(out, &value, sizeof(T));
}

/// Reads from a byte vector, failing with the source's name when it runs out.
struct reader {
  const byte_buffer& bytes;
  const std::string& source;
  std::size_t at = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw error(source + " sent a malformed tensor message: " + what + " (at byte " +
                std::to_string(at) + " of " + std::to_string(bytes.size()) + ")");
  }

  template <class T>
  T get() {
    if (bytes.size() - at < sizeof(T)) fail("it ends early");
    T value;
    std::memcpy(&value, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return value;
  }
};

} // namespace

byte_buffer encode_tensors(const std::vector<const tensor*>& tensors) {
  std::size_t size = sizeof(std::uint32_t);
  for (const tensor* t : tensors)
    size += sizeof(std::int32_t) + sizeof(std::uint32_t) + t->shape().size() * sizeof(std::int64_t) +
            sizeof(std::uint64_t) + t->bytes();
  byte_buffer out;
  out.reserve(size); // appended to without growing
  put<std::uint32_t>(out, static_cast<std::uint32_t>(tensors.size()));
  for (const tensor* t : tensors) {
    put<std::int32_t>(out, static_cast<std::int32_t>(t->type()));
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t->shape().size()));
    for (std::int64_t d : t->shape()) put<std::int64_t>(out, d);
    put<std::uint64_t>(out, t->bytes());
    append_bytes(out, t->raw(), t->bytes());
  }
  return out;
}

std::vector<tensor> decode_tensors(const byte_buffer& bytes, const std::string& source) {
  reader in{bytes, source};
  const auto count = in.get<std::uint32_t>();
  std::vector<tensor> out;
  for (std::uint32_t k = 0; k < count; ++k) {
    const auto type = static_cast<dtype>(in.get<std::int32_t>());
    const std::size_t element = size_of(type);
    if (element == 0) in.fail("unknown dtype " + std::to_string(static_cast<int>(type)));
    const auto rank = in.get<std::uint32_t>();
    if (rank > (bytes.size() - in.at) / sizeof(std::int64_t)) in.fail("a rank of " + std::to_string(rank));
    shape_t shape;
    std::uint64_t numel = 1;
    for (std::uint32_t d = 0; d < rank; ++d) {
      const auto dim = in.get<std::int64_t>();
      if (dim < 0) in.fail("a negative dimension");
      if (dim > 0 && numel > bytes.size() / static_cast<std::uint64_t>(dim))
        in.fail("a shape larger than the message");
      numel *= static_cast<std::uint64_t>(dim);
      shape.push_back(dim);
    }
    const auto size = in.get<std::uint64_t>();
    if (size != numel * element) in.fail("a byte count that disagrees with the shape");
    if (size > bytes.size() - in.at) in.fail("it ends early");
    tensor t(type, shape);
    if (size > 0) std::memcpy(t.raw(), bytes.data() + in.at, size);
    in.at += size;
    out.push_back(std::move(t));
  }
  if (in.at != bytes.size()) in.fail("trailing bytes");
  return out;
}

} // namespace pe
