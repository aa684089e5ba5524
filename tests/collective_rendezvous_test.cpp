// The meeting of GPU collectives' local ranks (collectives/gpu/collective_rendezvous): the
// last rank to arrive checks every rank's call and buffers and issues the collective once;
// a wrong sequence, a failed stream, disagreeing buffers, a failing issue or an abort fail
// it on every rank, and nobody waits forever. Host threads stand in for the streams'.
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "collectives/gpu/collective_rendezvous.hpp"
#include "core/tensor.hpp"
#include "devices/cpu/cpu_device.hpp"

namespace pe {
namespace {

using arrival = collective_rendezvous::arrival;

collective_call call_of(std::uint64_t sequence, collective_call::kind what = collective_call::kind::all_reduce,
                        int root = 0) {
  return {what, root, sequence, "all_reduce(w@GRAD)"};
}

/// Runs `part(rank)` on one thread per rank; the error message each rank got ("" if none).
std::vector<std::string> on_every_rank(int ranks, const std::function<void(int)>& part) {
  std::vector<std::future<std::string>> results;
  for (int r = 0; r < ranks; ++r)
    results.push_back(std::async(std::launch::async, [&, r] {
      try {
        part(r);
        return std::string();
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
    }));
  std::vector<std::string> out;
  for (auto& f : results) {
    EXPECT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "a rank is stuck";
    out.push_back(f.get());
  }
  return out;
}

TEST(CollectiveRendezvous, IssuesEachCollectiveOnceWithEveryRankInRankOrder) {
  constexpr int ranks = 3, collectives = 50;
  collective_rendezvous meeting(ranks);
  std::vector<tensor> buffers;
  for (int r = 0; r < ranks; ++r) buffers.push_back(tensor::zeros(dtype::fp32, {4}));
  std::atomic<int> issued{0};
  std::vector<std::uint64_t> sequences;
  const auto errors = on_every_rank(ranks, [&](int r) {
    for (std::uint64_t s = 0; s < collectives; ++s)
      meeting.meet(r, {call_of(s), {&buffers[static_cast<std::size_t>(r)]}, reinterpret_cast<void*>(std::intptr_t{r + 1})},
                   false, [&](std::vector<arrival>& by_rank) {
                     ASSERT_EQ(by_rank.size(), static_cast<std::size_t>(ranks));
                     for (int k = 0; k < ranks; ++k) {
                       EXPECT_EQ(by_rank[static_cast<std::size_t>(k)].stream, reinterpret_cast<void*>(std::intptr_t{k + 1}));
                       EXPECT_EQ(by_rank[static_cast<std::size_t>(k)].call.sequence, s);
                     }
                     sequences.push_back(s);
                     ++issued;
                   });
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(issued.load(), collectives);
  for (std::uint64_t s = 0; s < collectives; ++s) EXPECT_EQ(sequences[s], s);
}

TEST(CollectiveRendezvous, AnOutOfOrderLaunchFailsEveryRankNamingBoth) {
  collective_rendezvous meeting(2);
  tensor a = tensor::zeros(dtype::fp32, {2}), b = tensor::zeros(dtype::fp32, {2});
  bool issued = false;
  const auto errors = on_every_rank(2, [&](int r) {
    // Rank 1 skips #0: it must not wait for a meeting that can never be complete.
    meeting.meet(r, {call_of(r == 0 ? 0 : 1), {r == 0 ? &a : &b}}, false, [&](auto&) { issued = true; });
  });
  EXPECT_FALSE(issued);
  EXPECT_NE(errors[1].find("rank 1 launched collective #1 where #0 was due"), std::string::npos) << errors[1];
  EXPECT_NE(errors[0].find("rank 1 launched collective #1 where #0 was due"), std::string::npos) << errors[0];
  EXPECT_THROW(meeting.meet(0, {call_of(1), {&a}}, false, [](auto&) {}), std::exception) << "broken for good";
}

TEST(CollectiveRendezvous, AFailedStreamDisagreeingBuffersOrAFailingIssueFailEveryRank) {
  tensor small = tensor::zeros(dtype::fp32, {2}), large = tensor::zeros(dtype::fp32, {3});
  tensor ints = tensor::zeros(dtype::int64, {2}), missing;
  struct variant {
    std::function<tensor*(int)> buffer;
    bool failed_rank_1;
    bool issue_throws;
    std::string message;
  };
  const std::vector<variant> cases = {
      {[&](int) { return &small; }, true, false, "rank 1's stream had failed before it"},
      {[&](int r) { return r == 0 ? &small : &large; }, false, false, "ranks disagree on the size ([3] vs [2])"},
      {[&](int r) { return r == 0 ? &small : &ints; }, false, false, "the input on rank 1 is missing or not FP32"},
      {[&](int r) { return r == 0 ? &small : &missing; }, false, false, "the input on rank 1 is missing or not FP32"},
      {[&](int) { return &small; }, false, true, "all_reduce(w@GRAD): ncclGroupEnd: unhandled cuda error"},
  };
  for (const auto& c : cases) {
    collective_rendezvous meeting(2);
    bool issued = false;
    const auto errors = on_every_rank(2, [&](int r) {
      meeting.meet(r, {call_of(0), {c.buffer(r)}}, r == 1 && c.failed_rank_1, [&](auto&) {
        issued = true;
        if (c.issue_throws) throw std::runtime_error("ncclGroupEnd: unhandled cuda error");
      });
    });
    EXPECT_EQ(issued, c.issue_throws) << c.message;
    for (const auto& e : errors) EXPECT_NE(e.find(c.message), std::string::npos) << e;
  }
}

/// Every local rank of `meeting` meets at broadcast #0 from global rank `root`, local rank r
/// bringing buffers[r]; the error message each rank got ("" if none). Sets `issued` when the
/// broadcast is issued.
std::vector<std::string> meet_at_broadcast(collective_rendezvous& meeting, int root,
                                           const std::vector<tensor*>& buffers, bool& issued) {
  return on_every_rank(static_cast<int>(buffers.size()), [&](int r) {
    meeting.meet(r, {call_of(0, collective_call::kind::broadcast, root), {buffers[static_cast<std::size_t>(r)]}},
                 false, [&](auto&) { issued = true; });
  });
}

/// meet_at_broadcast issued the broadcast and failed no rank.
::testing::AssertionResult broadcasts(collective_rendezvous& meeting, int root, const std::vector<tensor*>& buffers) {
  bool issued = false;
  const auto errors = meet_at_broadcast(meeting, root, buffers, issued);
  if (!issued) return ::testing::AssertionFailure() << "the broadcast was not issued";
  for (std::size_t r = 0; r < errors.size(); ++r)
    if (!errors[r].empty()) return ::testing::AssertionFailure() << "rank " << r << ": " << errors[r];
  return ::testing::AssertionSuccess();
}

TEST(CollectiveRendezvous, ABroadcastChecksOnlyTheRootsBuffers) {
  collective_rendezvous meeting(2);
  tensor root = tensor::zeros(dtype::fp32, {5}), other; // the other is resized by the issue
  EXPECT_TRUE(broadcasts(meeting, 1, {&other, &root}));
}

TEST(CollectiveRendezvous, ABroadcastFromAnotherProcessFindsNoRootAmongTheLocalRanks) {
  // Process 0 of a job of one place each (global rank 0): a broadcast from rank 1, in
  // process 1. Its buffer is the destination, allocated by the executor with the root's size.
  collective_rendezvous meeting(1, 0);
  tensor mine = tensor::zeros(dtype::fp32, {5});
  EXPECT_TRUE(broadcasts(meeting, 1, {&mine}));
}

TEST(CollectiveRendezvous, ALocalRootOfALaterProcessIsFoundByItsGlobalRank) {
  // Process 1 of a job of two places each (global ranks 2 and 3): a broadcast from rank 3
  // checks local rank 1's buffers, and messages name global ranks.
  tensor root = tensor::zeros(dtype::fp32, {5}), other, ints = tensor::zeros(dtype::int64, {5});
  {
    collective_rendezvous meeting(2, 2);
    EXPECT_TRUE(broadcasts(meeting, 3, {&other, &root}));
  }
  collective_rendezvous meeting(2, 2);
  bool issued = false;
  const auto errors = meet_at_broadcast(meeting, 3, {&root, &ints}, issued);
  for (const auto& e : errors) EXPECT_NE(e.find("the input on rank 3 is missing or not FP32"), std::string::npos) << e;
}

TEST(CollectiveRendezvous, RanksOfDifferentCallsFailTheCollective) {
  collective_rendezvous meeting(2);
  tensor a = tensor::zeros(dtype::fp32, {2}), b = tensor::zeros(dtype::fp32, {2});
  const auto errors = on_every_rank(2, [&](int r) {
    meeting.meet(r, {r == 0 ? call_of(0) : call_of(0, collective_call::kind::reduce, 1), {r == 0 ? &a : &b}}, false,
                 [](auto&) {});
  });
  for (const auto& e : errors) EXPECT_NE(e.find("rank 1 runs"), std::string::npos) << e;
}

TEST(CollectiveRendezvous, AbortWakesAWaitingRankAndFailsLaterMeetings) {
  collective_rendezvous meeting(2);
  tensor a = tensor::zeros(dtype::fp32, {2});
  auto waiting = std::async(std::launch::async, [&] {
    try {
      meeting.meet(0, {call_of(0), {&a}}, false, [](auto&) {});
      return std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout) << "rank 0 waits for rank 1";
  meeting.abort("the executor is being destroyed");
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(waiting.get(), "the executor is being destroyed");
  EXPECT_THROW(meeting.meet(1, {call_of(0), {&a}}, false, [](auto&) {}), std::exception);
}

TEST(CollectiveRendezvous, PartsEnqueuedOnStreamsMeetThereAndReportTheirSpan) {
  cpu_device a(place::cpu(0)), b(place::cpu(1));
  collective_rendezvous meeting(2);
  tensor x = tensor::zeros(dtype::fp32, {3}), y = tensor::zeros(dtype::fp32, {3});
  int issued = 0, reported = 0;
  bool span_ok = false;
  auto issue = [&](std::vector<arrival>& by_rank) {
    ++issued;
    EXPECT_EQ(by_rank[1].stream, &y);
  };
  meeting.enqueue_part(0, call_of(0), {&x}, a.get_stream(stream_kind::communication), &x,
                       [&](const collective_span& span, bool ok) {
                         ++reported;
                         span_ok = ok && span.start_ns > 0 && span.end_ns >= span.start_ns;
                       },
                       issue);
  meeting.enqueue_part(1, call_of(0), {&y}, b.get_stream(stream_kind::communication), &y, {}, issue);
  EXPECT_TRUE(a.get_stream(stream_kind::communication).synchronize());
  EXPECT_TRUE(b.get_stream(stream_kind::communication).synchronize());
  EXPECT_EQ(issued, 1);
  EXPECT_EQ(reported, 1);
  EXPECT_TRUE(span_ok);
  // A failed stream still takes part, so the other rank fails instead of waiting.
  stream& failing = a.get_stream(stream_kind::communication);
  failing.enqueue([] { throw std::runtime_error("a kernel failed"); });
  meeting.enqueue_part(0, call_of(1), {&x}, failing, nullptr, {}, issue);
  meeting.enqueue_part(1, call_of(1), {&y}, b.get_stream(stream_kind::communication), nullptr, {}, issue);
  EXPECT_FALSE(b.get_stream(stream_kind::communication).synchronize());
  EXPECT_NE(b.get_stream(stream_kind::communication).error().value_or("").find("rank 0's stream had failed"),
            std::string::npos);
  EXPECT_FALSE(failing.synchronize());
  EXPECT_EQ(issued, 1);
}

/// A stream whose timed parts run at once on a thread of their own and whose device spans
/// the test tells, to see how a timed collective joins its ranks' spans.
class scripted_stream final : public stream {
 public:
  place where() const override { return place::gpu(0); }
  stream_kind kind() const override { return stream_kind::communication; }
  void enqueue(task) override { ADD_FAILURE() << "not used"; }
  void enqueue_always(std::function<void(bool)>) override { ADD_FAILURE() << "a timed call is enqueued timed"; }
  void enqueue_always_timed(std::function<void(bool failed)> work, span_sink timed) override {
    sink_ = std::move(timed);
    ran_ = std::async(std::launch::async, [work = std::move(work)] { work(false); });
  }
  void record(event&) override {}
  void wait(const event&) override {}
  bool synchronize() override { return ran_.wait_for(std::chrono::seconds(30)) == std::future_status::ready; }
  std::optional<std::string> error() const override { return std::nullopt; }
  pe::error_kind error_kind() const override { return pe::error_kind::ordinary; }
  void clear_error() override {}

  /// The device finished this rank's part between these times.
  void finish(std::int64_t start, std::int64_t end) { sink_({start, end}); }

 private:
  span_sink sink_;
  std::future<void> ran_;
};

TEST(CollectiveRendezvous, ATimedCollectiveReportsOnceEveryRanksDeviceSpanIsKnown) {
  collective_rendezvous meeting(2);
  tensor x = tensor::zeros(dtype::fp32, {3}), y = tensor::zeros(dtype::fp32, {3});
  struct case_t {
    std::int64_t start0, end0, start1, end1, start, end;
  };
  // The latest start and the earliest end; never an end before the start.
  std::uint64_t sequence = 0;
  for (const case_t c : {case_t{100, 500, 200, 400, 200, 400}, case_t{100, 150, 200, 400, 200, 200}}) {
    scripted_stream a, b;
    collective_call call = call_of(sequence++);
    call.timed = true;
    int reported = 0;
    collective_span got;
    meeting.enqueue_part(0, call, {&x}, a, nullptr,
                         [&](const collective_span& span, bool ok) {
                           ++reported;
                           EXPECT_TRUE(ok);
                           got = span;
                         },
                         [](auto&) {});
    meeting.enqueue_part(1, call, {&y}, b, nullptr, {}, [](auto&) {});
    ASSERT_TRUE(a.synchronize());
    ASSERT_TRUE(b.synchronize());
    EXPECT_EQ(reported, 0); // issued, but the devices have not finished
    b.finish(c.start1, c.end1);
    EXPECT_EQ(reported, 0);
    a.finish(c.start0, c.end0);
    ASSERT_EQ(reported, 1);
    EXPECT_EQ(got.start_ns, c.start);
    EXPECT_EQ(got.end_ns, c.end);
  }
}

} // namespace
} // namespace pe
