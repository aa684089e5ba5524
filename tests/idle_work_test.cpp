// idle_work (devices/idle_work.hpp): pieces of host work that idle device threads take and
// the thread that made the work finishes. Each piece runs once whoever takes it; finish()
// waits for the pieces in flight and rethrows the first failure; a CPU place's thread runs
// offered pieces while it has nothing else to do, and none once the offer is withdrawn.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "devices/cpu/cpu_device.hpp"
#include "devices/idle_work.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;

/// Polls `done` for up to 10 s: the bounded wait of a test that expects another thread to act.
template <class Done>
bool eventually(Done&& done) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(100us);
  }
  return true;
}

TEST(IdleWork, EveryPieceRunsOnceWhoeverTakesIt) {
  constexpr int pieces = 2000;
  std::vector<std::atomic<int>> runs(pieces);
  idle_work work([&](int k) { runs[static_cast<std::size_t>(k)].fetch_add(1); }, pieces);
  std::vector<std::thread> helpers;
  for (int t = 0; t < 3; ++t)
    helpers.emplace_back([&] {
      while (work.run_one()) {
      }
    });
  work.finish();
  for (auto& h : helpers) h.join();
  for (int k = 0; k < pieces; ++k) EXPECT_EQ(runs[static_cast<std::size_t>(k)].load(), 1) << "piece " << k;
  EXPECT_FALSE(work.left());
  EXPECT_FALSE(work.run_one());
}

TEST(IdleWork, FinishWaitsForThePieceAnotherThreadIsRunning) {
  std::atomic<bool> entered{false}, release{false};
  int written = 0; // plain: finish() must make the helper's write visible
  idle_work work(
      [&](int) {
        entered = true;
        while (!release) std::this_thread::yield();
        written = 42;
      },
      1);
  std::thread helper([&] { work.run_one(); });
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  std::atomic<bool> finished{false};
  std::thread finisher([&] {
    work.finish();
    finished = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(finished) << "finish() returned while a piece was still running";
  release = true;
  finisher.join();
  helper.join();
  EXPECT_EQ(written, 42);
}

TEST(IdleWork, AFailedPieceIsRethrownByFinishAfterTheOthersRan) {
  std::atomic<int> ran{0};
  idle_work work(
      [&](int k) {
        ++ran;
        if (k == 1) throw std::runtime_error("piece 1 could not read its rows");
      },
      4);
  EXPECT_TRUE(work.run_one());
  EXPECT_TRUE(work.run_one()); // piece 1: kept, not thrown here
  try {
    work.finish();
    FAIL() << "the failure was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "piece 1 could not read its rows");
  }
  EXPECT_EQ(ran.load(), 4);
}

TEST(IdleWork, NoPiecesIsNoWorkAndNonsenseIsRefused) {
  idle_work none(nullptr, 0);
  EXPECT_FALSE(none.left());
  EXPECT_FALSE(none.run_one());
  EXPECT_NO_THROW(none.finish());
  EXPECT_THROW(idle_work([](int) {}, -1), error);
  EXPECT_THROW(idle_work(nullptr, 3), error);
}

TEST(IdleWork, AnIdleCpuPlaceRunsTheOfferedPiecesOnItsOwnThread) {
  cpu_device d(place::cpu(0));
  const auto caller = std::this_thread::get_id();
  constexpr int pieces = 8;
  std::atomic<int> done{0}, on_caller{0};
  auto work = std::make_shared<idle_work>(
      [&](int) {
        if (std::this_thread::get_id() == caller) ++on_caller;
        ++done;
      },
      pieces);
  ASSERT_TRUE(d.offer_idle_work(work));
  // The caller takes nothing: the place's thread, idle or asleep, must take every piece.
  ASSERT_TRUE(eventually([&] { return done.load() == pieces; }));
  work->finish();
  EXPECT_EQ(on_caller.load(), 0);
  EXPECT_EQ(done.load(), pieces);
}

TEST(IdleWork, AWithdrawnOfferIsNotTakenAnyMore) {
  cpu_device d(place::cpu(0));
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> entered{false}, release{false};
  std::atomic<int> by_device{0}, by_caller{0};
  auto work = std::make_shared<idle_work>(
      [&](int k) {
        (std::this_thread::get_id() == caller ? by_caller : by_device)++;
        if (k == 0) {
          entered = true;
          while (!release) std::this_thread::yield();
        }
      },
      3);
  ASSERT_TRUE(d.offer_idle_work(work));
  ASSERT_TRUE(eventually([&] { return entered.load(); })); // the place's thread is in piece 0
  d.withdraw_idle_work();
  release = true;
  work->finish(); // waits for piece 0, takes pieces 1 and 2 itself
  EXPECT_EQ(by_device.load(), 1);
  EXPECT_EQ(by_caller.load(), 2);
}

TEST(IdleWork, APlaceThatIsStoppedLeavesItsOfferToTheCaller) {
  auto d = std::make_unique<cpu_device>(place::cpu(0));
  d->stop();
  std::atomic<int> done{0};
  auto work = std::make_shared<idle_work>([&](int) { ++done; }, 5);
  d->offer_idle_work(work);
  work->finish();
  EXPECT_EQ(done.load(), 5);
}

} // namespace
