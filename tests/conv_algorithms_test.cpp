// The cuDNN convolution algorithms' order and run-time fallback (kernels/cuda/
// conv_algorithms.hpp), checked on the host with made-up heuristic results and attempts:
// what conv_kernels.cu does with cuDNN's answers, without a GPU.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/conv_algorithms.hpp"

namespace pe::cuda {
namespace {

using math = heuristic_result::math;

heuristic_result result(int algo, bool deterministic, math m = math::fma, std::size_t memory = 0) {
  heuristic_result r;
  r.algo = algo;
  r.succeeded = true;
  r.math_type = m;
  r.deterministic = deterministic;
  r.sums_directly = true;
  r.memory = memory;
  return r;
}

TEST(ConvAlgorithms, DeterministicBeforeFasterNonDeterministicAndFmaBeforeDefaultMath) {
  // cuDNN's order (fastest first): 7 non-deterministic, 5 default math, 3 FMA, 2 FMA.
  const std::vector<heuristic_result> results = {
      result(7, false), result(5, true, math::default_math), result(3, true), result(2, true)};
  EXPECT_EQ(rank_algorithms(results, 1024), (std::vector<int>{3, 2, 5, 7}));
}

TEST(ConvAlgorithms, FailedTransformedTensorOpAndOversizedResultsAreNeverTaken) {
  heuristic_result failed = result(1, true);
  failed.succeeded = false;
  heuristic_result winograd = result(2, true);
  winograd.sums_directly = false;
  const std::vector<heuristic_result> results = {
      failed, winograd, result(3, true, math::tensor_op), result(4, true, math::fma, 2048), result(6, true)};
  EXPECT_EQ(rank_algorithms(results, 1024), (std::vector<int>{6}));
  EXPECT_TRUE(rank_algorithms({failed, winograd}, 1024).empty());
}

TEST(ConvAlgorithms, AnAlgorithmReportedWithTwoMathTypesIsRankedOnce) {
  const std::vector<heuristic_result> results = {result(4, true, math::default_math), result(4, true),
                                                 result(1, true)};
  EXPECT_EQ(rank_algorithms(results, 0), (std::vector<int>{4, 1}));
}

TEST(ConvAlgorithms, TheFirstCandidateThatRunsIsTheOnlyOneTried) {
  algorithm_candidates c({{3, 100}, {2, 0}});
  std::vector<int> tried;
  const auto failure = c.run([&](const conv_algorithm& a) {
    tried.push_back(a.algo);
    EXPECT_EQ(a.workspace, a.algo == 3 ? 100u : 0u);
    return attempt{};
  });
  EXPECT_FALSE(failure.has_value());
  EXPECT_EQ(tried, (std::vector<int>{3}));
  EXPECT_EQ(c.snapshot().size(), 2u);
}

TEST(ConvAlgorithms, AnUnusableCandidateGivesWayAndGoesLast) {
  algorithm_candidates c({{3, 1u << 30}, {1, 64}, {0, 0}});
  std::vector<int> tried;
  auto attempt_of = [&](const conv_algorithm& a) {
    tried.push_back(a.algo);
    if (a.algo == 3) return attempt{attempt::kind::unusable, "device memory exhausted"};
    return attempt{};
  };
  EXPECT_FALSE(c.run(attempt_of).has_value());
  EXPECT_EQ(tried, (std::vector<int>{3, 1}));
  tried.clear();
  EXPECT_FALSE(c.run(attempt_of).has_value()); // the next step starts at the one that ran
  EXPECT_EQ(tried, (std::vector<int>{1}));
  const auto order = c.snapshot();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0].algo, 1);
  EXPECT_EQ(order[1].algo, 0);
  EXPECT_EQ(order[2].algo, 3);
  EXPECT_EQ(order[2].workspace, 1u << 30);
}

TEST(ConvAlgorithms, AFatalErrorStopsAtOnceAndKeepsTheCandidate) {
  algorithm_candidates c({{3, 0}, {1, 0}});
  int tries = 0;
  const auto failure = c.run([&](const conv_algorithm&) {
    ++tries;
    return attempt{attempt::kind::fatal, "CUDNN_STATUS_BAD_PARAM"};
  });
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(*failure, "CUDNN_STATUS_BAD_PARAM");
  EXPECT_EQ(tries, 1);
  EXPECT_EQ(c.snapshot().size(), 2u);
}

TEST(ConvAlgorithms, WhenEveryCandidateIsUnusableTheErrorNamesEachReasonAndNoneIsLost) {
  algorithm_candidates c({{3, 0}, {1, 0}});
  const auto failure = c.run([](const conv_algorithm& a) {
    return attempt{attempt::kind::unusable, a.algo == 3 ? "CUDNN_STATUS_NOT_SUPPORTED" : "out of memory"};
  });
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(*failure, "every candidate algorithm failed; algorithm 3: CUDNN_STATUS_NOT_SUPPORTED; "
                      "algorithm 1: out of memory");
  // Memory freed since: the next call runs, with the first candidate again.
  std::vector<int> tried;
  EXPECT_FALSE(c.run([&](const conv_algorithm& a) {
                  tried.push_back(a.algo);
                  return attempt{};
                }).has_value());
  EXPECT_EQ(tried, (std::vector<int>{3}));
  EXPECT_EQ(algorithm_candidates({}).run([](const conv_algorithm&) { return attempt{}; }),
            std::optional<std::string>("there is no candidate algorithm"));
}

TEST(ConvAlgorithms, PlacesFallingBackAtOnceAllRunAndTheRefusedCandidateEndsLast) {
  // Four stream threads hit the same shape at once, and its first candidate is refused.
  algorithm_candidates c({{7, 0}, {3, 0}, {1, 0}});
  std::atomic<int> done{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int step = 0; step < 50; ++step) {
        const auto failure = c.run([&](const conv_algorithm& a) {
          if (a.algo == 7) {
            ++refused;
            return attempt{attempt::kind::unusable, "CUDNN_STATUS_NOT_SUPPORTED"};
          }
          return attempt{};
        });
        if (!failure) ++done;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(done.load(), 200);
  EXPECT_GE(refused.load(), 1);
  EXPECT_LE(refused.load(), 4); // each thread tries it at most once, before it goes last
  const auto order = c.snapshot();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0].algo, 3);
  EXPECT_EQ(order[2].algo, 7);
}

} // namespace
} // namespace pe::cuda
