// Select over several channels: ready cases, default, parking, timeouts,
// closed channels, fairness, and many selecting consumers.
#include "rill/select.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace rill {
namespace {

using namespace std::chrono_literals;

TEST(SelectTest, FiresTheReadyCase) {
  Channel<int> a(1), b(1);
  ASSERT_EQ(b.Send(2), ChannelStatus::kOk);
  int x = 0, y = 0;
  Select select;
  const int from_a = select.Recv(a, &x);
  const int from_b = select.Recv(b, &y);
  SelectResult r = select.Wait();
  EXPECT_NE(r.index, from_a);
  EXPECT_EQ(r.index, from_b);
  EXPECT_EQ(r.status, ChannelStatus::kOk);
  EXPECT_EQ(y, 2);
}

TEST(SelectTest, DefaultFiresWhenNothingIsReady) {
  Channel<int> a(0);
  int x = 0;
  Select select;
  select.Recv(a, &x);
  const int fallback = select.Default();
  SelectResult r = select.Wait();
  EXPECT_EQ(r.index, fallback);
  EXPECT_EQ(r.status, ChannelStatus::kWouldBlock);
}

TEST(SelectTest, ParksUntilACaseCanGoThroughAndLeavesNothingBehind) {
  Channel<int> a(0), b(0);
  std::thread sender([&] {
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(b.Send(7), ChannelStatus::kOk);
  });
  int x = 0, y = 0;
  Select select;
  select.Recv(a, &x);
  const int from_b = select.Recv(b, &y);
  SelectResult r = select.Wait();
  sender.join();
  EXPECT_EQ(r.index, from_b);
  EXPECT_EQ(y, 7);
  // The select's parked receive on `a` was withdrawn: a send there finds nobody.
  int v = 1;
  EXPECT_EQ(a.TrySend(v), ChannelStatus::kWouldBlock);
}

TEST(SelectTest, SendCaseHandsOverToAReceiver) {
  Channel<int> out(0), never(0);
  std::atomic<int> got{0};
  std::thread receiver([&] {
    int v = 0;
    EXPECT_EQ(out.Recv(&v), ChannelStatus::kOk);
    got = v;
  });
  int unused = 0;
  Select select;
  select.Recv(never, &unused);
  const int send = select.Send(out, 11);
  SelectResult r = select.Wait();
  receiver.join();
  EXPECT_EQ(r.index, send);
  EXPECT_EQ(got.load(), 11);
}

TEST(SelectTest, TimesOutAndWithdrawsItsCases) {
  Channel<int> a(0);
  int x = 0;
  Select select;
  select.Recv(a, &x);
  SelectResult r = select.WaitFor(15ms);
  EXPECT_EQ(r.index, -1);
  EXPECT_EQ(r.status, ChannelStatus::kTimeout);
  int v = 1;
  EXPECT_EQ(a.TrySend(v), ChannelStatus::kWouldBlock);
}

TEST(SelectTest, ClosedChannelsFireTheirCasesWithClosed) {
  Channel<int> a(0), b(0);
  std::thread closer([&] {
    std::this_thread::sleep_for(10ms);
    a.Close();
  });
  int x = 0;
  Select select;
  const int from_a = select.Recv(a, &x);
  select.Recv(b, &x);
  SelectResult r = select.Wait();
  closer.join();
  EXPECT_EQ(r.index, from_a);
  EXPECT_EQ(r.status, ChannelStatus::kClosed);

  Select send_to_closed;
  const int send = send_to_closed.Send(a, 1);
  r = send_to_closed.Wait();
  EXPECT_EQ(r.index, send);
  EXPECT_EQ(r.status, ChannelStatus::kClosed);
}

TEST(SelectTest, NoReadyCaseIsStarved) {
  // Both channels always hold a value: over 10k rounds each case must win
  // often (a fixed order would always pick the first).
  Channel<int> a(1), b(1);
  int wins[2] = {0, 0};
  constexpr int kRounds = 10000;
  for (int round = 0; round < kRounds; ++round) {
    if (a.size() == 0) {
      ASSERT_EQ(a.Send(1), ChannelStatus::kOk);
    }
    if (b.size() == 0) {
      ASSERT_EQ(b.Send(2), ChannelStatus::kOk);
    }
    int x = 0;
    Select select;
    select.Recv(a, &x);
    select.Recv(b, &x);
    SelectResult r = select.Wait();
    ASSERT_GE(r.index, 0);
    ++wins[r.index];
  }
  // Binomial(10000, 0.5): 4500 is ten standard deviations below the mean.
  EXPECT_GT(wins[0], 4500);
  EXPECT_GT(wins[1], 4500);
}

TEST(SelectTest, EmptySelectIsAnError) {
  Select select;
  EXPECT_THROW(select.Wait(), Error);
}

TEST(SelectTest, SelectingConsumersTakeEveryItemExactlyOnce) {
  // Producers feed two channels; consumers select over both. Each item must
  // be taken once.
  for (size_t capacity : {0u, 1u, 64u}) {
    Channel<int> a(capacity), b(capacity);
    constexpr int kPerChannel = 4000;
    std::vector<std::atomic<int>> seen(2 * kPerChannel);
    std::atomic<int> closed{0};
    std::thread pa([&] {
      for (int i = 0; i < kPerChannel; ++i) ASSERT_EQ(a.Send(i), ChannelStatus::kOk);
      a.Close();
    });
    std::thread pb([&] {
      for (int i = 0; i < kPerChannel; ++i) ASSERT_EQ(b.Send(kPerChannel + i), ChannelStatus::kOk);
      b.Close();
    });
    std::vector<std::thread> consumers;
    for (int c = 0; c < 3; ++c) {
      consumers.emplace_back([&] {
        bool a_open = true, b_open = true;
        while (a_open || b_open) {
          int x = -1, y = -1;
          Select select;
          const int ia = a_open ? select.Recv(a, &x) : -2;
          const int ib = b_open ? select.Recv(b, &y) : -2;
          SelectResult r = select.WaitFor(10s);
          ASSERT_GE(r.index, 0) << "a consumer waited 10 s";
          if (r.status == ChannelStatus::kClosed) {
            if (r.index == ia) a_open = false;
            if (r.index == ib) b_open = false;
            continue;
          }
          seen[static_cast<size_t>(r.index == ia ? x : y)].fetch_add(1);
        }
        ++closed;
      });
    }
    pa.join();
    pb.join();
    for (auto& t : consumers) t.join();
    for (size_t i = 0; i < seen.size(); ++i)
      ASSERT_EQ(seen[i].load(), 1) << "item " << i << ", capacity " << capacity;
  }
}

}  // namespace
}  // namespace rill
