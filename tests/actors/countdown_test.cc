// Tests of the primitives under the hot path: the generation-tagged
// countdown and the intrusive MPSC queue, alone and under contention.
#include "actors/executor/countdown.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "actors/executor/mpsc_queue.h"

namespace rill {
namespace {

TEST(CountdownTest, TheLastArrivalOfTheGenerationIsReady) {
  Countdown c;
  c.Reset(7, 3);
  EXPECT_EQ(c.Arrive(7), Countdown::Arrival::kWaiting);
  EXPECT_EQ(c.Arrive(7), Countdown::Arrival::kWaiting);
  EXPECT_EQ(c.Arrive(7), Countdown::Arrival::kReady);
  EXPECT_EQ(c.remaining(), 0u);
}

TEST(CountdownTest, ArrivalsForAnotherGenerationOrPastZeroAreStale) {
  Countdown c;
  c.Reset(2, 1);
  EXPECT_EQ(c.Arrive(1), Countdown::Arrival::kStale);  // a straggler of iteration 1
  EXPECT_EQ(c.remaining(), 1u);
  EXPECT_EQ(c.Arrive(2), Countdown::Arrival::kReady);
  EXPECT_EQ(c.Arrive(2), Countdown::Arrival::kStale);
  EXPECT_EQ(c.generation(), 2u);
}

TEST(CountdownTest, ExactlyOneOfManyConcurrentArrivalsIsReady) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5000;
  for (int round = 0; round < 20; ++round) {
    Countdown c;
    c.Reset(static_cast<uint32_t>(round + 1), kThreads * kPerThread);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kPerThread; ++i) {
          if (c.Arrive(static_cast<uint32_t>(round + 1)) == Countdown::Arrival::kReady) ++ready;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(ready.load(), 1);
  }
}

struct Item {
  std::atomic<Item*> queue_next{nullptr};
  int producer = -1;
  int sequence = -1;
};

TEST(MpscQueueTest, FifoForOneProducer) {
  MpscQueue<Item> q;
  Item items[3];
  for (int i = 0; i < 3; ++i) {
    items[i].sequence = i;
    q.Push(&items[i]);
  }
  for (int i = 0; i < 3; ++i) {
    Item* it = q.Pop();
    ASSERT_NE(it, nullptr);
    EXPECT_EQ(it->sequence, i);
  }
  EXPECT_EQ(q.Pop(), nullptr);
}

TEST(MpscQueueTest, ManyProducersLoseNothingAndKeepEachProducersOrder) {
  constexpr int kProducers = 3;
  constexpr int kPerProducer = 20000;
  std::vector<Item> items(kProducers * kPerProducer);
  MpscQueue<Item> q;
  std::atomic<int> started{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      ++started;
      for (int i = 0; i < kPerProducer; ++i) {
        Item& it = items[p * kPerProducer + i];
        it.producer = p;
        it.sequence = i;
        q.Push(&it);
      }
    });
  }
  std::vector<int> next(kProducers, 0);
  int received = 0;
  while (received < kProducers * kPerProducer) {
    Item* it = q.Pop();
    if (it == nullptr) {
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(it->sequence, next[it->producer]) << "producer " << it->producer;
    ++next[it->producer];
    ++received;
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(q.Pop(), nullptr);
}

}  // namespace
}  // namespace rill
