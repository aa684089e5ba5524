#pragma once

// The host side of the CUDA dropout kernel: the mask the CPU kernel draws
// (devices/cpu/dropout_kernels.cpp documents the scheme), drawn here with the same
// std::mt19937_64 and seed sequence, so that a step drops the same elements on a GPU place
// as on a CPU place with the same index. The GPU kernel copies the mask to the device and
// applies it there. The host tests check this mask against the CPU kernel's Mask output.

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace pe::cuda {

/// The generator of one dropout call: `step` is the kernel context's next_call(), `seed_input`
/// the Seed input's value when bound.
inline std::mt19937_64 dropout_generator(std::uint64_t step, int place_index,
                                         std::int32_t seed_attr, bool fix_seed,
                                         std::optional<std::int32_t> seed_input) {
  std::uint64_t seed = static_cast<std::uint32_t>(seed_attr);
  bool fixed = fix_seed;
  if (seed_input) {
    seed = static_cast<std::uint32_t>(*seed_input);
    fixed = true;
  }
  if (seed == 0 && !fixed) {
    std::random_device entropy;
    return std::mt19937_64((std::uint64_t{entropy()} << 32) | entropy());
  }
  const std::uint64_t draw = fixed ? 0 : step;
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(place_index),
                    static_cast<std::uint32_t>(draw), static_cast<std::uint32_t>(draw >> 32)};
  return std::mt19937_64(seq);
}

/// n mask bytes, 1 = keep: kept when the generator's top 53 bits, as a fraction of 2^53, are
/// >= prob.
inline std::vector<std::uint8_t> draw_dropout_mask(std::mt19937_64& g, float prob,
                                                   std::int64_t n) {
  const auto threshold = static_cast<std::uint64_t>(std::ldexp(static_cast<double>(prob), 53));
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(n));
  for (auto& m : mask) m = (g() >> 11) >= threshold ? 1 : 0;
  return mask;
}

} // namespace pe::cuda
