// Batch normalization channel by channel over NCHW planes (kernels/cpu/norm_planes.hpp),
// against the formulas in double precision on random data: the training forward (batch
// statistics, Y), the forward with given statistics, and the backward in training and with
// global statistics, in place too (Y on X, X@GRAD on Y@GRAD or on X), over shapes with
// planes of one element, of an odd count and of many. That the batch_norm kernels built on
// it equal Paddle is batch_norm_ops_test's and the Paddle fixtures' part.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/norm_planes.hpp"

namespace {

using pe::norm_planes;

struct shape {
  std::int64_t n, c, spatial;
};

std::vector<float> random_values(std::size_t count, unsigned seed, float offset) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(offset, 2.f);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

std::size_t at(const shape& s, std::int64_t b, std::int64_t ch, std::int64_t i) {
  return static_cast<std::size_t>((b * s.c + ch) * s.spatial + i);
}

/// Per channel, the mean and biased variance in double.
void reference_statistics(const shape& s, const std::vector<float>& x, std::vector<double>& mean,
                          std::vector<double>& variance) {
  const double count = static_cast<double>(s.n * s.spatial);
  mean.assign(static_cast<std::size_t>(s.c), 0);
  variance.assign(mean.size(), 0);
  for (std::int64_t ch = 0; ch < s.c; ++ch) {
    const auto k = static_cast<std::size_t>(ch);
    for (std::int64_t b = 0; b < s.n; ++b)
      for (std::int64_t i = 0; i < s.spatial; ++i) mean[k] += x[at(s, b, ch, i)];
    mean[k] /= count;
    for (std::int64_t b = 0; b < s.n; ++b)
      for (std::int64_t i = 0; i < s.spatial; ++i) variance[k] += std::pow(x[at(s, b, ch, i)] - mean[k], 2);
    variance[k] /= count;
  }
}

void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, double tolerance,
                     const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * (1 + std::abs(want[i]))) << what << " at " << i;
}

class NormPlanes : public ::testing::TestWithParam<shape> {};

TEST_P(NormPlanes, TrainingForwardIsTheBatchStatisticsAndTheirNormalization) {
  const shape s = GetParam();
  const auto size = static_cast<std::size_t>(s.n * s.c * s.spatial), channels = static_cast<std::size_t>(s.c);
  const std::vector<float> x = random_values(size, 1, 3.f);
  const std::vector<float> scale = random_values(channels, 2, 1.f), bias = random_values(channels, 3, 0.f);
  const float epsilon = 1e-5f;
  std::vector<double> mean, variance;
  reference_statistics(s, x, mean, variance);
  std::vector<double> y(size);
  for (std::int64_t b = 0; b < s.n; ++b)
    for (std::int64_t ch = 0; ch < s.c; ++ch)
      for (std::int64_t i = 0; i < s.spatial; ++i) {
        const auto k = static_cast<std::size_t>(ch);
        y[at(s, b, ch, i)] = scale[k] * (x[at(s, b, ch, i)] - mean[k]) / std::sqrt(variance[k] + epsilon) + bias[k];
      }
  const norm_planes planes{s.n, s.c, s.spatial};
  std::vector<float> got_y(size), got_mean(channels), got_variance(channels);
  planes.train_forward(x.data(), scale.data(), bias.data(), epsilon, got_y.data(), got_mean.data(), got_variance.data());
  expect_near_all(got_mean, mean, 1e-5, "mean");
  expect_near_all(got_variance, variance, 1e-5, "variance");
  expect_near_all(got_y, y, 1e-4, "y");
  // In place: Y written over X.
  std::vector<float> in_place = x;
  planes.train_forward(in_place.data(), scale.data(), bias.data(), epsilon, in_place.data(), got_mean.data(),
                       got_variance.data());
  expect_near_all(in_place, y, 1e-4, "y over x");
  expect_near_all(got_mean, mean, 1e-5, "mean (in place)");
}

TEST_P(NormPlanes, NormalizeUsesTheGivenStatistics) {
  const shape s = GetParam();
  const auto size = static_cast<std::size_t>(s.n * s.c * s.spatial), channels = static_cast<std::size_t>(s.c);
  const std::vector<float> x = random_values(size, 4, -1.f);
  const std::vector<float> mean = random_values(channels, 5, 0.f), scale = random_values(channels, 6, 1.f),
                           bias = random_values(channels, 7, 0.f);
  std::vector<float> inv_std(channels);
  for (std::size_t k = 0; k < channels; ++k) inv_std[k] = 0.25f + static_cast<float>(k % 3);
  std::vector<double> y(size);
  for (std::int64_t b = 0; b < s.n; ++b)
    for (std::int64_t ch = 0; ch < s.c; ++ch)
      for (std::int64_t i = 0; i < s.spatial; ++i) {
        const auto k = static_cast<std::size_t>(ch);
        y[at(s, b, ch, i)] = static_cast<double>(scale[k]) * (x[at(s, b, ch, i)] - mean[k]) * inv_std[k] + bias[k];
      }
  std::vector<float> got(size);
  norm_planes{s.n, s.c, s.spatial}.normalize(x.data(), mean.data(), inv_std.data(), scale.data(), bias.data(), got.data());
  expect_near_all(got, y, 1e-5, "y");
}

/// The backward from its formulas: dbias = sum dy, dscale = sum dy * xhat; dx in training
/// dy's part left after the mean and the xhat direction, scaled; with global statistics
/// scale * inv_std * dy.
void check_backward(const shape& s, bool global, int alias) {
  const auto size = static_cast<std::size_t>(s.n * s.c * s.spatial), channels = static_cast<std::size_t>(s.c);
  const std::vector<float> x = random_values(size, 8, 2.f), dy = random_values(size, 9, 0.5f);
  const std::vector<float> scale = random_values(channels, 10, 1.f);
  std::vector<double> mean_d, variance_d;
  reference_statistics(s, x, mean_d, variance_d);
  std::vector<float> mean(channels), inv_std(channels);
  for (std::size_t k = 0; k < channels; ++k) {
    mean[k] = static_cast<float>(mean_d[k]);
    inv_std[k] = static_cast<float>(1 / std::sqrt(variance_d[k] + 1e-5));
  }
  const double count = static_cast<double>(s.n * s.spatial);
  std::vector<double> dbias(channels), dscale(channels), dx(size);
  for (std::int64_t ch = 0; ch < s.c; ++ch) {
    const auto k = static_cast<std::size_t>(ch);
    for (std::int64_t b = 0; b < s.n; ++b)
      for (std::int64_t i = 0; i < s.spatial; ++i) {
        dbias[k] += dy[at(s, b, ch, i)];
        dscale[k] += static_cast<double>(dy[at(s, b, ch, i)]) * (x[at(s, b, ch, i)] - mean[k]) * inv_std[k];
      }
    for (std::int64_t b = 0; b < s.n; ++b)
      for (std::int64_t i = 0; i < s.spatial; ++i) {
        const double xhat = (x[at(s, b, ch, i)] - mean[k]) * static_cast<double>(inv_std[k]);
        const double rest = global ? dy[at(s, b, ch, i)] : dy[at(s, b, ch, i)] - dbias[k] / count - xhat * dscale[k] / count;
        dx[at(s, b, ch, i)] = static_cast<double>(scale[k]) * inv_std[k] * rest;
      }
  }
  std::vector<float> got_x = x, got_dy = dy, got_dx(size), got_dscale(channels), got_dbias(channels);
  float* out = alias == 1 ? got_dy.data() : alias == 2 ? got_x.data() : got_dx.data();
  norm_planes{s.n, s.c, s.spatial}.backward(got_x.data(), got_dy.data(), mean.data(), inv_std.data(), scale.data(),
                                            global, got_dscale.data(), got_dbias.data(), out);
  expect_near_all(got_dbias, dbias, 1e-4, "dbias");
  expect_near_all(got_dscale, dscale, 1e-4, "dscale");
  const std::vector<float>& result = alias == 1 ? got_dy : alias == 2 ? got_x : got_dx;
  expect_near_all(result, dx, 1e-4, alias == 1 ? "dx over dy" : alias == 2 ? "dx over x" : "dx");
}

TEST_P(NormPlanes, BackwardInTraining) {
  for (int alias : {0, 1, 2}) check_backward(GetParam(), false, alias);
}

TEST_P(NormPlanes, BackwardWithGlobalStatistics) {
  for (int alias : {0, 1, 2}) check_backward(GetParam(), true, alias);
}

TEST(NormPlanesGrad, WithoutDxOnlyTheParameterGradients) {
  const shape s{2, 3, 5};
  const std::vector<float> x = random_values(30, 11, 0.f), dy = random_values(30, 12, 0.f);
  const std::vector<float> mean(3, 0.5f), inv_std(3, 2.f), scale(3, 1.f);
  std::vector<float> dscale(3), dbias(3);
  norm_planes{s.n, s.c, s.spatial}.backward(x.data(), dy.data(), mean.data(), inv_std.data(), scale.data(), false,
                                            dscale.data(), dbias.data(), nullptr);
  double sum = 0;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t i = 0; i < 5; ++i) sum += dy[at(s, b, 1, i)];
  EXPECT_NEAR(dbias[1], sum, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormPlanes,
                         ::testing::Values(shape{4, 3, 1}, shape{2, 5, 7}, shape{8, 16, 64}, shape{3, 2, 577}),
                         [](const auto& info) {
                           const shape& s = info.param;
                           return "n" + std::to_string(s.n) + "c" + std::to_string(s.c) + "s" + std::to_string(s.spatial);
                         });

} // namespace
