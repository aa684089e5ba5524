// Data formats by name (data/data_format.hpp): --data's forms come from the registry, a
// spec is parsed once into its format and directory, and a format registered under a new
// name is loaded like the built-in ones.
#include <gtest/gtest.h>

#include <vector>

#include "data/data_format.hpp"
#include "support/expect_error.hpp"

namespace {

using namespace pe;
using pe::testing::expect_error;

TEST(DataFormats, TheBuiltInFormatsAreRegisteredByName) {
  std::vector<std::string> names;
  for (const auto& f : data_formats()) names.push_back(f.name);
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 3),
            (std::vector<std::string>{"synthetic", "idx", "npy"}));
  // Another test of this file registers a fourth: "synthetic, idx:DIR, npy:DIR or ones:DIR".
  EXPECT_EQ(data_spec_forms().rfind("synthetic, idx:DIR", 0), 0u) << data_spec_forms();
  EXPECT_NE(data_spec_forms().find("npy:DIR"), std::string::npos) << data_spec_forms();
}

TEST(DataFormats, ASpecIsParsedIntoItsFormatAndDirectory) {
  const auto idx = parse_data_spec("idx:/data/mnist");
  EXPECT_EQ(idx.format.name, "idx");
  EXPECT_EQ(idx.dir, "/data/mnist");
  EXPECT_TRUE(idx.format.pixels);
  EXPECT_FALSE(idx.format.feeds_by_name);
  const auto npy = parse_data_spec("npy:d:with:colons");
  EXPECT_EQ(npy.dir, "d:with:colons");
  EXPECT_TRUE(npy.format.feeds_by_name);
  EXPECT_EQ(npy.format.origin("d", "image", true), "d/test/image.npy");
  EXPECT_EQ(parse_data_spec("synthetic").format.name, "synthetic");
  for (const char* bad : {"mnist", "idx", "idx:", "npy:", "synthetic:d", ""})
    expect_error([&] { parse_data_spec(bad); },
                 {"expected synthetic, idx:DIR", "npy:DIR", std::string("got '") + bad + "'"});
}

TEST(DataFormats, ARegisteredFormatLoadsByItsName) {
  register_data_format({"ones", true, false, false, "rows of ones",
                        [](const std::string& dir, const data_load_options& o) {
                          const auto n = static_cast<std::int64_t>(dir.size());
                          dataset d({{"x", tensor::from_vector(std::vector<float>(static_cast<std::size_t>(n * 2), 1.f), {n, 2})},
                                     {"y", tensor::from_vector(std::vector<std::int64_t>(static_cast<std::size_t>(n), o.seed), {n, 1})}});
                          return data_splits{d, std::nullopt};
                        },
                        [](const std::string& dir, const std::string&, bool) { return "ones:" + dir; }});
  EXPECT_NE(data_spec_forms().find("ones:DIR"), std::string::npos) << data_spec_forms();
  const auto data = load_data("ones:abc", 7, false);
  EXPECT_EQ(data.train.size(), 3);
  EXPECT_EQ(data.train.width("x"), 2);
  EXPECT_EQ(data.train.at("y").values<std::int64_t>()[2], 7);
}

} // namespace
