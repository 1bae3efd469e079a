// Channel<T>: buffering, rendezvous, close, timeouts, asynchronous operations,
// and many producers and consumers over one channel (plain threads and fibers).
#include "rill/channel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <numeric>
#include <thread>
#include <vector>

#include "actors/channels/fiber_pool.h"
#include "rill/error.h"
#include "rill/wait_group.h"

namespace rill {
namespace {

using namespace std::chrono_literals;

TEST(ChannelTest, BufferedChannelKeepsOrderAndHoldsCapacityValues) {
  Channel<int> ch(3);
  for (int i = 0; i < 3; ++i) {
    int v = i;
    ASSERT_EQ(ch.TrySend(v), ChannelStatus::kOk);
  }
  int extra = 3;
  EXPECT_EQ(ch.TrySend(extra), ChannelStatus::kWouldBlock);
  EXPECT_EQ(extra, 3) << "a failed try must leave the value with the caller";
  EXPECT_EQ(ch.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    int v = -1;
    ASSERT_EQ(ch.Recv(&v), ChannelStatus::kOk);
    EXPECT_EQ(v, i);
  }
  int v = -1;
  EXPECT_EQ(ch.TryRecv(&v), ChannelStatus::kWouldBlock);
}

TEST(ChannelTest, RendezvousHandsOverOnlyToAWaitingReceiver) {
  Channel<int> ch(0);
  int v = 7;
  EXPECT_EQ(ch.TrySend(v), ChannelStatus::kWouldBlock) << "nobody is receiving";
  std::atomic<bool> sent{false};
  std::thread sender([&] {
    EXPECT_EQ(ch.Send(42), ChannelStatus::kOk);
    sent = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(sent) << "a rendezvous send waits for its receiver";
  int got = 0;
  EXPECT_EQ(ch.Recv(&got), ChannelStatus::kOk);
  EXPECT_EQ(got, 42);
  sender.join();
  EXPECT_TRUE(sent);
}

TEST(ChannelTest, CloseLetsReceiversDrainThenReportsClosed) {
  Channel<int> ch(4);
  ASSERT_EQ(ch.Send(1), ChannelStatus::kOk);
  ASSERT_EQ(ch.Send(2), ChannelStatus::kOk);
  ch.Close();
  ch.Close();  // idempotent
  EXPECT_EQ(ch.Send(3), ChannelStatus::kClosed) << "sending on a closed channel is an error status";
  int v = 0;
  EXPECT_EQ(ch.Recv(&v), ChannelStatus::kOk);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(ch.TryRecv(&v), ChannelStatus::kOk);
  EXPECT_EQ(v, 2);
  EXPECT_EQ(ch.Recv(&v), ChannelStatus::kClosed);
  EXPECT_EQ(ch.RecvFor(&v, 10ms), ChannelStatus::kClosed);
}

TEST(ChannelTest, TimedOperationsTimeOutAndLoseNothing) {
  Channel<int> ch(1);
  int v = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ch.RecvFor(&v, 20ms), ChannelStatus::kTimeout);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  int first = 1;
  ASSERT_EQ(ch.SendFor(first, 20ms), ChannelStatus::kOk);
  int second = 2;
  EXPECT_EQ(ch.SendFor(second, 20ms), ChannelStatus::kTimeout);
  EXPECT_EQ(second, 2);
  // The timed-out operations left nothing parked behind: the channel works on.
  ASSERT_EQ(ch.Recv(&v), ChannelStatus::kOk);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(ch.TryRecv(&v), ChannelStatus::kWouldBlock);
}

TEST(ChannelTest, AsyncReceiveCompletesInlineOrOnTheSendersThread) {
  Channel<int> ch(1);
  ASSERT_EQ(ch.Send(5), ChannelStatus::kOk);
  int got = 0;
  auto inline_handle = ch.AsyncRecv([&](ChannelStatus s, int v) {
    EXPECT_EQ(s, ChannelStatus::kOk);
    got = v;
  });
  EXPECT_FALSE(inline_handle.parked());
  EXPECT_EQ(got, 5);

  std::promise<std::pair<ChannelStatus, int>> later;
  auto handle = ch.AsyncRecv([&](ChannelStatus s, int v) { later.set_value({s, v}); });
  EXPECT_TRUE(handle.parked());
  std::thread sender([&] { EXPECT_EQ(ch.Send(9), ChannelStatus::kOk); });
  auto [status, value] = later.get_future().get();
  sender.join();
  EXPECT_EQ(status, ChannelStatus::kOk);
  EXPECT_EQ(value, 9);
  EXPECT_FALSE(handle.Cancel()) << "a completed receive cannot be withdrawn";
}

TEST(ChannelTest, CancelledAsyncReceiveNeverRunsAndTakesNothing) {
  Channel<int> ch(1);
  bool ran = false;
  auto handle = ch.AsyncRecv([&](ChannelStatus, int) { ran = true; });
  ASSERT_TRUE(handle.Cancel());
  ASSERT_EQ(ch.Send(3), ChannelStatus::kOk);
  int v = 0;
  EXPECT_EQ(ch.TryRecv(&v), ChannelStatus::kOk);
  EXPECT_EQ(v, 3);
  EXPECT_FALSE(ran);
}

TEST(ChannelTest, AsyncSendParksUntilRoomAndReportsClose) {
  Channel<int> ch(0);
  std::promise<ChannelStatus> first;
  ch.AsyncSend(1, [&](ChannelStatus s) { first.set_value(s); });
  int v = 0;
  ASSERT_EQ(ch.Recv(&v), ChannelStatus::kOk);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(first.get_future().get(), ChannelStatus::kOk);
  std::promise<ChannelStatus> second;
  ch.AsyncSend(2, [&](ChannelStatus s) { second.set_value(s); });
  ch.Close();
  EXPECT_EQ(second.get_future().get(), ChannelStatus::kClosed);
}

TEST(ChannelTest, CloseReleasesEveryBlockedReceiver) {
  Channel<int> ch(2);
  constexpr int kReceivers = 6;
  std::vector<std::future<ChannelStatus>> results;
  for (int i = 0; i < kReceivers; ++i) {
    results.push_back(std::async(std::launch::async, [&] {
      int v = 0;
      return ch.Recv(&v);
    }));
  }
  std::this_thread::sleep_for(20ms);
  ch.Close();
  for (auto& r : results) {
    ASSERT_EQ(r.wait_for(5s), std::future_status::ready) << "a receiver stayed blocked after close";
    EXPECT_EQ(r.get(), ChannelStatus::kClosed);
  }
}

TEST(ChannelTest, CloseReleasesEveryBlockedSenderAndKeepsTheBuffer) {
  for (size_t capacity : {0u, 1u, 3u}) {
    Channel<int> ch(capacity);
    for (size_t i = 0; i < capacity; ++i)
      ASSERT_EQ(ch.Send(static_cast<int>(i)), ChannelStatus::kOk);
    constexpr int kSenders = 5;
    std::vector<std::future<ChannelStatus>> results;
    for (int i = 0; i < kSenders; ++i) {
      results.push_back(std::async(std::launch::async, [&ch] { return ch.Send(100); }));
    }
    std::this_thread::sleep_for(20ms);
    ch.Close();
    for (auto& r : results) {
      ASSERT_EQ(r.wait_for(5s), std::future_status::ready) << "a sender stayed blocked after close";
      EXPECT_EQ(r.get(), ChannelStatus::kClosed) << "capacity " << capacity;
    }
    for (size_t i = 0; i < capacity; ++i) {
      int v = -1;
      ASSERT_EQ(ch.Recv(&v), ChannelStatus::kOk);
      EXPECT_EQ(v, static_cast<int>(i));
    }
    int v = 0;
    EXPECT_EQ(ch.Recv(&v), ChannelStatus::kClosed);
  }
}

// M producers send disjoint ranges; K consumers receive until close. Every
// value must arrive exactly once.
struct Tally {
  explicit Tally(int n) : seen(static_cast<size_t>(n)) {}
  std::vector<std::atomic<int>> seen;
  std::atomic<int64_t> sum{0};
  std::atomic<int> count{0};
  void Take(int v) {
    seen[static_cast<size_t>(v)].fetch_add(1);
    sum += v;
    ++count;
  }
  void ExpectEachOnce(int n) {
    EXPECT_EQ(count.load(), n);
    EXPECT_EQ(sum.load(), static_cast<int64_t>(n) * (n - 1) / 2);
    for (int i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "value " << i;
  }
};

class ChannelStressTest : public ::testing::TestWithParam<size_t> {};

TEST_P(ChannelStressTest, ThreadsMoveEveryItemExactlyOnce) {
  constexpr int kProducers = 4, kConsumers = 3, kPerProducer = 3000;
  constexpr int kItems = kProducers * kPerProducer;
  Channel<int> ch(GetParam());
  Tally tally(kItems);
  std::vector<std::thread> threads;
  std::atomic<int> producing{kProducers};
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i)
        ASSERT_EQ(ch.Send(p * kPerProducer + i), ChannelStatus::kOk);
      if (--producing == 0) ch.Close();
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      int v = 0;
      // Mix the ways of receiving: blocking, timed, and trying.
      for (;;) {
        ChannelStatus s = c == 0 ? ch.Recv(&v) : c == 1 ? ch.RecvFor(&v, 1ms) : ch.TryRecv(&v);
        if (s == ChannelStatus::kClosed) break;
        if (s == ChannelStatus::kOk) tally.Take(v);
        if (s == ChannelStatus::kWouldBlock) std::this_thread::yield();
      }
    });
  }
  for (auto& t : threads) t.join();
  tally.ExpectEachOnce(kItems);
}

TEST_P(ChannelStressTest, FibersMoveEveryItemExactlyOnce) {
  constexpr int kProducers = 6, kConsumers = 5, kPerProducer = 2000;
  constexpr int kItems = kProducers * kPerProducer;
  FiberPool pool(FiberPool::Options{.threads = 2});
  Channel<int> ch(GetParam());
  Tally tally(kItems);
  WaitGroup done;
  done.Add(kProducers + kConsumers);
  std::atomic<int> producing{kProducers};
  for (int p = 0; p < kProducers; ++p) {
    pool.Spawn([&, p] {
      for (int i = 0; i < kPerProducer; ++i)
        EXPECT_EQ(ch.Send(p * kPerProducer + i), ChannelStatus::kOk);
      if (--producing == 0) ch.Close();
      done.Done();
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    pool.Spawn([&] {
      int v = 0;
      while (ch.Recv(&v) == ChannelStatus::kOk) tally.Take(v);
      done.Done();
    });
  }
  ASSERT_TRUE(done.WaitFor(60s)) << "fibers did not finish";
  tally.ExpectEachOnce(kItems);
}

INSTANTIATE_TEST_SUITE_P(Capacities, ChannelStressTest, ::testing::Values(0u, 1u, 64u),
                         [](const auto& info) { return "Capacity" + std::to_string(info.param); });

TEST(FiberPoolTest, FibersOfOneThreadTakeTurnsWhileParked) {
  // Two fibers on a single thread ping-pong over rendezvous channels: only
  // possible if a parked fiber lets the other run.
  FiberPool pool(FiberPool::Options{.threads = 1});
  Channel<int> ping(0), pong(0);
  WaitGroup done;
  done.Add(2);
  int last = -1;
  pool.Spawn([&] {
    for (int i = 0; i < 1000; ++i) {
      EXPECT_EQ(ping.Send(i), ChannelStatus::kOk);
      int v = 0;
      EXPECT_EQ(pong.Recv(&v), ChannelStatus::kOk);
      last = v;
    }
    done.Done();
  });
  pool.Spawn([&] {
    int v = 0;
    for (int i = 0; i < 1000; ++i) {
      EXPECT_EQ(ping.Recv(&v), ChannelStatus::kOk);
      EXPECT_EQ(pong.Send(v + 1), ChannelStatus::kOk);
    }
    done.Done();
  });
  ASSERT_TRUE(done.WaitFor(30s));
  EXPECT_EQ(last, 1000);
}

TEST(FiberPoolTest, ShutdownWaitsForRunningFibersAndRefusesNewOnes) {
  FiberPool pool(FiberPool::Options{.threads = 2});
  std::atomic<int> finished{0};
  Channel<int> gate(0);
  for (int i = 0; i < 10; ++i) {
    pool.Spawn([&] {
      int v = 0;
      (void)gate.RecvFor(&v, 50ms);
      ++finished;
    });
  }
  pool.Shutdown();
  EXPECT_EQ(finished.load(), 10);
  EXPECT_THROW(pool.Spawn([] {}), Error);
}

TEST(WaitGroupTest, WaitReturnsWhenEveryTaskIsDone) {
  WaitGroup group;
  EXPECT_TRUE(group.WaitFor(1ms)) << "an empty group is done";
  group.Add(3);
  std::vector<std::thread> tasks;
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    tasks.emplace_back([&] {
      ++ran;
      group.Done();
    });
  }
  group.Wait();
  EXPECT_EQ(ran.load(), 3);
  for (auto& t : tasks) t.join();
}

TEST(WaitGroupTest, WaitForTimesOutWhileTasksRemain) {
  WaitGroup group;
  group.Add(1);
  EXPECT_FALSE(group.WaitFor(10ms));
  group.Done();
  EXPECT_TRUE(group.WaitFor(10ms));
}

TEST(WaitGroupTest, AsyncWaitRunsOnceTheCountReachesZero) {
  WaitGroup group;
  int calls = 0;
  group.AsyncWait([&] { ++calls; });
  EXPECT_EQ(calls, 1) << "runs inline when nothing is pending";
  group.Add(2);
  group.AsyncWait([&] { ++calls; });
  group.Done();
  EXPECT_EQ(calls, 1);
  group.Done();
  EXPECT_EQ(calls, 2);
}

TEST(WaitGroupTest, DoneBelowZeroIsAnError) {
  WaitGroup group;
  EXPECT_THROW(group.Done(), Error);
  group.Add(1);
  group.Done();
  EXPECT_EQ(group.count(), 0);
}

TEST(WaitGroupTest, FibersWaitWithoutBlockingTheirThread) {
  FiberPool pool(FiberPool::Options{.threads = 1});
  WaitGroup inner, outer;
  inner.Add(1);
  outer.Add(2);
  pool.Spawn([&] {
    inner.Wait();  // parks this fiber; the next one runs on the same thread
    outer.Done();
  });
  pool.Spawn([&] {
    inner.Done();
    outer.Done();
  });
  EXPECT_TRUE(outer.WaitFor(10s));
}

}  // namespace
}  // namespace rill
