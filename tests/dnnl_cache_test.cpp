// The oneDNN kernels' primitive cache (kernels/cpu/dnnl_cache.hpp): keys that tell
// descriptors apart, one make per key and thread, a bounded size. That cached kernels
// compute what they did is the op tests' part (conv_ops_test, pool_ops_test,
// batch_norm_ops_test, activation_ops_test run many shapes on one thread), and the
// Paddle-fixture tests' (bit-for-bit losses).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>

#include "kernels/cpu/dnnl_cache.hpp"
#include "kernels/cpu/dnnl_context.hpp"

namespace {

using pe::dnnl_cached;
using pe::dnnl_key;
using tag = dnnl::memory::format_tag;

dnnl::memory::desc desc(const dnnl::memory::dims& dims, tag format) {
  return {dims, dnnl::memory::data_type::f32, format};
}

TEST(DnnlKey, SameDescriptorSameKey) {
  const auto a = desc({2, 16, 5, 5}, tag::nchw);
  const auto b = desc({2, 16, 5, 5}, tag::nchw);
  EXPECT_TRUE(dnnl_key('x').add(a) == dnnl_key('x').add(b));
  EXPECT_EQ(dnnl_key('x').add(a).hash(), dnnl_key('x').add(b).hash());
  // dnnl_plain_desc (strides) describes the same layout as the nchw tag.
  EXPECT_TRUE(dnnl_key('x').add(a) == dnnl_key('x').add(pe::dnnl_plain_desc({2, 16, 5, 5})));
}

TEST(DnnlKey, LayoutsDimsAndTypesDiffer) {
  const dnnl_key plain = dnnl_key('x').add(desc({2, 16, 5, 5}, tag::nchw));
  EXPECT_FALSE(plain == dnnl_key('x').add(desc({2, 16, 5, 5}, tag::nChw8c)));
  EXPECT_FALSE(plain == dnnl_key('x').add(desc({2, 16, 5, 5}, tag::nChw16c)));
  EXPECT_FALSE(plain == dnnl_key('x').add(desc({2, 16, 5, 5}, tag::nhwc)));
  EXPECT_FALSE(plain == dnnl_key('x').add(desc({2, 16, 5, 6}, tag::nchw)));
  EXPECT_FALSE(plain == dnnl_key('x').add(desc({16, 2, 5, 5}, tag::nchw)));
  EXPECT_FALSE(plain == dnnl_key('y').add(desc({2, 16, 5, 5}, tag::nchw)));
  const dnnl::memory::desc s8({2, 16, 5, 5}, dnnl::memory::data_type::s8, tag::nchw);
  EXPECT_FALSE(plain == dnnl_key('x').add(s8));
}

TEST(DnnlKey, VectorsCarryTheirLength) {
  EXPECT_FALSE(dnnl_key('x').add({1, 2}).add({3}) == dnnl_key('x').add({1}).add({2, 3}));
  EXPECT_TRUE(dnnl_key('x').add({1, 2}).add({3}) == dnnl_key('x').add({1, 2}).add({3}));
  EXPECT_FALSE(dnnl_key('x').add_bits(1e-5f) == dnnl_key('x').add_bits(1e-6f));
}

/// A cache entry that says which make() produced it.
struct made {
  int serial = 0;
};

TEST(DnnlCached, MakesOncePerKey) {
  int makes = 0;
  const auto get = [&](std::int64_t which) {
    return dnnl_cached<made>(dnnl_key('m').add(which), [&] { return made{++makes}; }).serial;
  };
  const int first = get(1);
  const int second = get(2);
  EXPECT_NE(first, second);
  EXPECT_EQ(get(1), first);
  EXPECT_EQ(get(2), second);
  EXPECT_EQ(makes, 2);
}

TEST(DnnlCached, EachThreadMakesItsOwn) {
  int makes_here = 0, makes_there = 0;
  const dnnl_key key = dnnl_key('t').add(7);
  dnnl_cached<made>(key, [&] { return made{++makes_here}; });
  std::thread([&] { dnnl_cached<made>(key, [&] { return made{++makes_there}; }); }).join();
  dnnl_cached<made>(key, [&] { return made{++makes_here}; });
  EXPECT_EQ(makes_here, 1);
  EXPECT_EQ(makes_there, 1); // another engine, another cache
}

TEST(DnnlCached, AFailedMakeKeepsNothing) {
  const dnnl_key key = dnnl_key('f').add(1);
  EXPECT_THROW(dnnl_cached<made>(key, []() -> made { throw std::runtime_error("no"); }),
               std::runtime_error);
  EXPECT_EQ(dnnl_cached<made>(key, [] { return made{42}; }).serial, 42);
}

TEST(DnnlCached, StaysBounded) {
  // Its own entry type, so that the other tests' entries do not count.
  struct bounded {
    int serial = 0;
  };
  int makes = 0;
  const auto get = [&](std::int64_t which) {
    return dnnl_cached<bounded>(dnnl_key('b').add(which), [&] { return bounded{++makes}; }).serial;
  };
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(pe::dnnl_cache_limit); ++i) get(i);
  EXPECT_EQ(makes, static_cast<int>(pe::dnnl_cache_limit));
  get(0); // still there
  EXPECT_EQ(makes, static_cast<int>(pe::dnnl_cache_limit));
  get(-1); // one more starts the cache over
  EXPECT_EQ(makes, static_cast<int>(pe::dnnl_cache_limit) + 1);
  get(0);
  EXPECT_EQ(makes, static_cast<int>(pe::dnnl_cache_limit) + 2);
  get(-1); // kept after the start over
  EXPECT_EQ(makes, static_cast<int>(pe::dnnl_cache_limit) + 2);
}

} // namespace
