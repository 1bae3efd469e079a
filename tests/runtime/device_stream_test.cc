// The stream and event protocol on the asynchronous CPU device: launches
// return before their work runs and run in order; a stream waits for another
// stream's event without blocking the host, for the point recorded when it
// was asked to; host waits; errors come back at Synchronize.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <random>
#include <vector>

#include "rill/error.h"
#include "runtime/device/async_cpu_stream.h"

namespace rill {
namespace {

// A gate the host opens: work that passes it cannot run before the host says so.
class Gate {
 public:
  void Open() { open_.set_value(); }
  void Pass() { opened_.wait(); }

 private:
  std::promise<void> open_;
  std::shared_future<void> opened_ = open_.get_future().share();
};

TEST(AsyncCpuStreamTest, LaunchesReturnAtOnceAndRunInOrder) {
  AsyncCpuStream stream("acpu:0 compute");
  Gate gate;
  std::vector<int> order;  // written by the stream's thread only
  stream.Launch([&] { gate.Pass(); });
  for (int i = 0; i < 100; ++i) stream.Launch([&order, i] { order.push_back(i); });
  auto event = stream.NewEvent();
  stream.Record(*event);
  EXPECT_FALSE(event->Query()) << "the launches ran on the host's thread";
  gate.Open();
  stream.Synchronize();
  EXPECT_TRUE(event->Query());
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_EQ(stream.Describe(), "acpu:0 compute");
}

TEST(AsyncCpuStreamTest, AStreamWaitsForAnotherStreamsEventWithoutBlockingTheHost) {
  AsyncCpuStream producer("acpu:0 compute"), consumer("acpu:0 copy");
  Gate gate;
  int value = 0;  // written by the producer, read by the consumer after the event
  std::atomic<bool> consumed{false};
  int seen = -1;
  auto event = producer.NewEvent();
  producer.Launch([&] {
    gate.Pass();
    value = 42;
  });
  producer.Record(*event);
  consumer.Wait(*event);
  consumer.Launch([&] {
    seen = value;
    consumed = true;
  });
  // The host got here while the producer is still held at the gate.
  EXPECT_FALSE(consumed.load());
  EXPECT_FALSE(event->Query());
  gate.Open();
  consumer.Synchronize();
  EXPECT_TRUE(consumed.load());
  EXPECT_EQ(seen, 42);
  EXPECT_TRUE(event->Query());
}

// cudaStreamWaitEvent semantics: the wait is for the event's latest record at
// the time of the call, not for records made after it.
TEST(AsyncCpuStreamTest, AWaitIsForThePointRecordedWhenItWasAsked) {
  AsyncCpuStream producer("p"), consumer("c");
  Gate later;
  auto event = producer.NewEvent();
  producer.Launch([] {});
  producer.Record(*event);  // point 1
  std::atomic<bool> ran{false};
  consumer.Wait(*event);
  consumer.Launch([&] { ran = true; });
  producer.Launch([&] { later.Pass(); });
  producer.Record(*event);  // point 2, held back by the gate
  consumer.Synchronize();   // ends: point 1 has passed
  EXPECT_TRUE(ran.load());
  EXPECT_FALSE(event->Query()) << "the event's latest point is behind the gate";
  later.Open();
  event->Synchronize();
  EXPECT_TRUE(event->Query());
}

TEST(AsyncCpuStreamTest, WaitingForAnEventNeverRecordedDoesNotWait) {
  AsyncCpuStream a("a"), b("b");
  auto event = a.NewEvent();
  EXPECT_TRUE(event->Query());
  event->Synchronize();
  b.Wait(*event);
  bool ran = false;
  b.Launch([&] { ran = true; });
  b.Synchronize();
  EXPECT_TRUE(ran);
}

TEST(AsyncCpuStreamTest, ErrorsComeBackAtSynchronizeAndLaterWorkStillRuns) {
  AsyncCpuStream stream("acpu:1 compute");
  int after = 0;
  stream.Launch([] { throw Error(ErrorCode::kInvalidArgument, "first"); });
  stream.Launch([] { throw Error(ErrorCode::kInvalidArgument, "second"); });
  stream.Launch([&] { after = 1; });
  try {
    stream.Synchronize();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("first"), std::string::npos) << e.what();
  }
  EXPECT_EQ(after, 1);
  EXPECT_NO_THROW(stream.Synchronize());  // reported once
}

TEST(AsyncCpuStreamTest, DestroyingAStreamRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    AsyncCpuStream stream("s");
    for (int i = 0; i < 50; ++i) stream.Launch([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 50);
}

// Streams hand a counter along a random chain of events: every step reads
// what the step before it (on another stream) wrote, so a missed wait shows
// as a wrong count (and as a race under ThreadSanitizer).
TEST(AsyncCpuStreamTest, ChainsOfCrossStreamWaitsKeepEveryDependency) {
  constexpr int kStreams = 4;
  constexpr int kSteps = 2000;
  std::vector<std::unique_ptr<AsyncCpuStream>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<AsyncCpuStream>("acpu:" + std::to_string(i)));
  }
  std::vector<int64_t> counter(1, 0);  // plain memory: ordered by the events only
  std::mt19937 rng(3);
  std::unique_ptr<DeviceEvent> last;
  int previous = -1;
  std::vector<std::unique_ptr<DeviceEvent>> events;
  for (int step = 0; step < kSteps; ++step) {
    const int s = static_cast<int>(rng() % kStreams);
    if (last != nullptr && s != previous) streams[s]->Wait(*last);
    streams[s]->Launch([&counter, step] {
      ASSERT_EQ(counter[0], step);
      counter[0] = step + 1;
    });
    auto event = streams[s]->NewEvent();
    streams[s]->Record(*event);
    if (last != nullptr) events.push_back(std::move(last));  // kept alive: waits refer to them
    last = std::move(event);
    previous = s;
  }
  for (auto& stream : streams) stream->Synchronize();
  EXPECT_EQ(counter[0], kSteps);
}

}  // namespace
}  // namespace rill
