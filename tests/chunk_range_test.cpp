// The cuts the collectives share work by (collectives/chunk_range.hpp): chunks cover [0, n)
// in order without gaps, cut on multiples of the unit, and with unit 1 they are the plain
// proportional cuts n*k/parts the ring across processes has always used.
#include <gtest/gtest.h>

#include "collectives/chunk_range.hpp"

namespace pe {
namespace {

TEST(ChunkRange, ChunksCoverEveryElementInOrderCutOnTheUnit) {
  for (std::size_t n : {0u, 1u, 63u, 64u, 65u, 1000u, 4099u})
    for (std::size_t parts : {1u, 2u, 3u, 7u})
      for (std::size_t unit : {1u, 64u}) {
        std::size_t next = 0;
        for (std::size_t k = 0; k < parts; ++k) {
          const auto [begin, end] = chunk_range(n, k, parts, unit);
          EXPECT_EQ(begin, next) << n << " " << parts << " " << unit << " chunk " << k;
          EXPECT_LE(begin, end);
          if (end != n) {
            EXPECT_EQ(end % unit, 0u) << n << " " << parts << " " << unit;
          }
          next = end;
        }
        EXPECT_EQ(next, n) << n << " " << parts << " " << unit;
      }
}

TEST(ChunkRange, UnitOneIsTheProportionalCut) {
  for (std::size_t n : {5u, 1000u, 4099u})
    for (std::size_t parts : {2u, 3u})
      for (std::size_t k = 0; k < parts; ++k)
        EXPECT_EQ(chunk_range(n, k, parts), std::make_pair(n * k / parts, n * (k + 1) / parts));
}

} // namespace
} // namespace pe
