// The input pipeline: every example once per epoch in the seeded order,
// batches in order and split over places, the end of an epoch as closed
// channels, prompt stops; and a read op feeding training gives the losses
// that feeding the same batches gives. Without decode threads (decode_threads
// 0) each place decodes its own slice on the thread that reads it, and gets
// the same examples in the same order.
#include "rill/input_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"

namespace rill {
namespace {

// Example i: x = [i, 2i] (float32), y = [i] (int64). Decoding sleeps a little
// at random, so that decode threads finish out of order.
class CountingSource : public BatchSource {
 public:
  explicit CountingSource(int64_t n, bool jitter = false) : n_(n), jitter_(jitter) {}
  int64_t size() const override { return n_; }
  std::vector<std::string> fields() const override { return {"x", "y"}; }
  std::vector<Tensor> Decode(const std::vector<int64_t>& indices) const override {
    const auto n = static_cast<int64_t>(indices.size());
    Tensor x(DataType::kFloat32, {n, 2});
    Tensor y(DataType::kInt64, {n, 1});
    for (int64_t i = 0; i < n; ++i) {
      x.mutable_data<float>()[2 * i] = static_cast<float>(indices[i]);
      x.mutable_data<float>()[2 * i + 1] = static_cast<float>(2 * indices[i]);
      y.mutable_data<int64_t>()[i] = indices[i];
    }
    if (jitter_) std::this_thread::sleep_for(std::chrono::microseconds(indices[0] % 7 * 50));
    return {x, y};
  }

 private:
  int64_t n_;
  bool jitter_;
};

std::vector<int64_t> ExpectedOrder(int64_t n, uint64_t seed, int epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 shuffle(seed * 1000003 + static_cast<uint64_t>(epoch));
  std::shuffle(order.begin(), order.end(), shuffle);
  return order;
}

TEST(InputPipelineTest, DeliversEveryExampleOnceInTheSeededOrder) {
  for (int places : {1, 2, 3}) {
    for (int threads : {0, 1, 3}) {
      InputPipeline::Options o;
      o.batch = 8;
      o.places = places;
      o.seed = 7;
      o.decode_threads = threads;
      InputPipeline pipeline(std::make_shared<CountingSource>(101, /*jitter=*/true), o);
      for (int epoch = 1; epoch <= 2; ++epoch) {
        pipeline.StartEpoch(epoch);
        std::vector<int64_t> seen;
        int64_t step = 0;
        while (true) {
          // A step takes one slice from every place; together they are the batch.
          bool any = false;
          for (int p = 0; p < places; ++p) {
            PipelineBatch b;
            if (!pipeline.Next(p, &b)) continue;
            any = true;
            EXPECT_EQ(b.step, step);
            EXPECT_EQ(b.decoded_here, threads == 0);
            ASSERT_EQ(b.fields.size(), 2u);
            for (int64_t r = 0; r < b.fields[1].dim(0); ++r) {
              const int64_t id = b.fields[1].data<int64_t>()[r];
              EXPECT_EQ(b.fields[0].data<float>()[2 * r + 1], 2.0f * static_cast<float>(id));
              seen.push_back(id);
            }
          }
          if (!any) break;
          ++step;
        }
        EXPECT_EQ(step, 13);  // ceil(101 / 8)
        EXPECT_EQ(seen, ExpectedOrder(101, 7, epoch))
            << places << " places, " << threads << " threads";
      }
    }
  }
}

TEST(InputPipelineTest, StopReleasesADecoderBlockedOnAFullChannel) {
  InputPipeline::Options o;
  o.batch = 4;
  o.prefetch = 1;
  InputPipeline pipeline(std::make_shared<CountingSource>(1000), o);
  pipeline.StartEpoch(1);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(20));  // the decoder fills the channel and waits
  const auto start = std::chrono::steady_clock::now();
  pipeline.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  PipelineBatch b;
  EXPECT_TRUE(pipeline.Next(0, &b));   // what was buffered drains
  EXPECT_FALSE(pipeline.Next(0, &b));  // then the channel is closed
}

// Records the threads its batches were decoded on.
class ThreadRecordingSource : public CountingSource {
 public:
  ThreadRecordingSource() : CountingSource(40) {}
  std::vector<Tensor> Decode(const std::vector<int64_t>& indices) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    threads_.push_back(std::this_thread::get_id());
    return CountingSource::Decode(indices);
  }
  std::vector<std::thread::id> threads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return threads_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::vector<std::thread::id> threads_;
};

TEST(InputPipelineTest, WithoutDecodeThreadsEachPlaceDecodesOnTheThreadThatReads) {
  auto source = std::make_shared<ThreadRecordingSource>();
  InputPipeline pipeline(source, {.batch = 8, .places = 2, .decode_threads = 0});
  pipeline.StartEpoch(1);
  std::vector<int64_t> rows[2];
  auto read_all = [&](int place) {
    PipelineBatch b;
    while (pipeline.Next(place, &b)) rows[place].push_back(b.fields[1].dim(0));
  };
  std::thread other(read_all, 1);
  read_all(0);
  other.join();
  // 40 examples in batches of 8: 5 steps of 4 rows a place, each decoded by its reader.
  EXPECT_EQ(rows[0], std::vector<int64_t>(5, 4));
  EXPECT_EQ(rows[1], std::vector<int64_t>(5, 4));
  const auto threads = source->threads();
  ASSERT_EQ(threads.size(), 10u);
  EXPECT_EQ(std::count(threads.begin(), threads.end(), std::this_thread::get_id()), 5);
  EXPECT_EQ(pipeline.counters().decoded, 5);
  EXPECT_EQ(pipeline.counters().batches, 10);
  // A stopped pipeline decodes nothing more; a new epoch starts over.
  pipeline.StartEpoch(2);
  pipeline.Stop();
  PipelineBatch b;
  EXPECT_FALSE(pipeline.Next(0, &b));
  pipeline.StartEpoch(3);
  EXPECT_TRUE(pipeline.Next(1, &b));
  EXPECT_EQ(b.step, 0);
}

TEST(InputPipelineTest, RejectsBadOptions) {
  InputPipeline::Options o;
  o.batch = 0;
  EXPECT_THROW(InputPipeline(std::make_shared<CountingSource>(10), o), Error);
  o.batch = 2;
  o.decode_threads = -1;
  EXPECT_THROW(InputPipeline(std::make_shared<CountingSource>(10), o), Error);
  o.decode_threads = 1;
  o.batch = 2;
  o.places = 3;
  EXPECT_THROW(InputPipeline(std::make_shared<CountingSource>(10), o), Error);
}

// A small regression trained for two epochs: batches fed by the caller, and
// the same batches taken by a read op from the pipeline.
struct Model {
  Program main, startup;
  Var x, y, loss;
};

void BuildModel(Model* m, bool with_reader) {
  Builder b(&m->main, &m->startup, 3);
  m->x = b.Data("x", {-1, 2});
  Var target = b.Data("target", {-1, 1});
  m->loss = b.Mean(b.SquareErrorCost(b.Fc(m->x, 1), target));
  SGD(0.001f).Minimize(b, m->loss);
  if (with_reader) b.Read(b.Reader("reader"), {m->x, target}, /*first=*/true);
}

class TargetSource : public CountingSource {  // y as a float target: 3x0 - x1 + 1
 public:
  TargetSource() : CountingSource(50) {}
  std::vector<std::string> fields() const override { return {"x", "target"}; }
  std::vector<Tensor> Decode(const std::vector<int64_t>& indices) const override {
    auto fields = CountingSource::Decode(indices);
    Tensor t(DataType::kFloat32, {fields[0].dim(0), 1});
    for (int64_t i = 0; i < t.dim(0); ++i) {
      const float* x = fields[0].data<float>() + 2 * i;
      t.mutable_data<float>()[i] = (3 * x[0] - x[1] + 1) / 50.0f;
      fields[0].mutable_data<float>()[2 * i] /= 50.0f;
      fields[0].mutable_data<float>()[2 * i + 1] /= 50.0f;
    }
    return {fields[0], t};
  }
};

// The regression's targets in batches of `batch`, split over `places`.
std::shared_ptr<InputPipeline> TargetPipeline(int64_t batch, int places, int decode_threads) {
  InputPipeline::Options o;
  o.batch = batch;
  o.places = places;
  o.seed = 1;
  o.decode_threads = decode_threads;
  return std::make_shared<InputPipeline>(std::make_shared<TargetSource>(), o);
}

std::vector<float> TrainLosses(bool reader, int places, bool actor, int decode_threads = 1) {
  Model m;
  BuildModel(&m, reader);
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  auto pipeline = TargetPipeline(10, places, decode_threads);
  if (reader) scope.Var("reader")->set_object(pipeline);
  std::vector<Place> where(static_cast<size_t>(places), Place::Cpu());
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  std::unique_ptr<ParallelExecutor> actors;
  std::unique_ptr<PreparedBlock> prepared;
  Executor reference;
  if (actor) {
    actors = std::make_unique<ParallelExecutor>(
        m.main.desc(), &scope, ParallelExecutor::Options{.places = where, .strategy = strategy});
  } else {
    prepared = reference.Prepare(m.main.desc(), &scope);
  }
  // The caller's batches: the pipeline's own, merged over the places.
  InputPipeline feeder(std::make_shared<TargetSource>(), {.batch = 10, .places = 1, .seed = 1});
  std::vector<float> losses;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    pipeline->StartEpoch(epoch);
    feeder.StartEpoch(epoch);
    for (int step = 0; step < 5; ++step) {
      PipelineBatch batch;
      EXPECT_TRUE(feeder.Next(0, &batch));
      FeedList feeds;
      if (!reader) feeds = {{"x", batch.fields[0]}, {"target", batch.fields[1]}};
      auto out = actor ? actors->Run(feeds, {m.loss.name})
                       : reference.Run(*prepared, feeds, {m.loss.name});
      losses.push_back(out[0].data<float>()[0]);
    }
  }
  return losses;
}

TEST(InputPipelineTest, ReadOpTrainsLikeFeedingTheSameBatches) {
  const auto fed = TrainLosses(false, 1, false);
  EXPECT_EQ(TrainLosses(true, 1, false), fed);
  EXPECT_EQ(TrainLosses(true, 1, true), fed);
  EXPECT_EQ(TrainLosses(false, 2, true), TrainLosses(true, 2, true));
  // Each place decoding its own slice in its read op: the same batches.
  EXPECT_EQ(TrainLosses(true, 1, false, /*decode_threads=*/0), fed);
  EXPECT_EQ(TrainLosses(true, 1, true, 0), fed);
  EXPECT_EQ(TrainLosses(true, 2, true, 0), TrainLosses(false, 2, true));
}

// A reader whose places' reads of a step wait (up to 2 s) until every place
// has asked: it records whether they met, and on which threads they ran.
class MeetingReader : public BatchReader {
 public:
  explicit MeetingReader(int places) : places_(places) {}
  std::string Describe() const override { return "meeting reader"; }
  bool Next(int place, PipelineBatch* out) override {
    bool ended = false;
    return TryNext(place, out, &ended);
  }
  bool TryNext(int place, PipelineBatch* out, bool* ended) override {
    *ended = false;
    std::unique_lock<std::mutex> lock(mutex_);
    threads_.insert(std::this_thread::get_id());
    ++arrived_;
    arrived_cv_.notify_all();
    const int64_t step_end = (arrived_ + places_ - 1) / places_ * places_;
    met_ &=
        arrived_cv_.wait_for(lock, std::chrono::seconds(2), [&] { return arrived_ >= step_end; });
    Tensor x(DataType::kFloat32, {2, 2});
    Tensor target(DataType::kFloat32, {2, 1});
    for (int i = 0; i < 4; ++i) x.mutable_data<float>()[i] = static_cast<float>(place + i) / 8;
    target.mutable_data<float>()[0] = target.mutable_data<float>()[1] = 0.5f;
    out->fields = {x, target};
    out->step = (arrived_ - 1) / places_;
    return true;
  }
  bool met() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return met_;
  }
  size_t threads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return threads_.size();
  }

 private:
  const int places_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_cv_;
  int64_t arrived_ = 0;
  bool met_ = true;
  std::set<std::thread::id> threads_;
};

// The read ops of a step's places run at the same time, each on a thread of
// its place, not one after the other on the thread that starts the step.
TEST(InputPipelineTest, ThePlacesReadsOfAStepRunAtOnce) {
  Model m;
  BuildModel(&m, true);
  Scope scope;
  Executor().Run(m.startup.desc(), &scope);
  auto reader = std::make_shared<MeetingReader>(2);
  scope.Var("reader")->set_object(reader);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  ParallelExecutor exe(m.main.desc(), &scope,
                       {.places = {Place::Cpu(), Place::Cpu()}, .strategy = strategy});
  for (int step = 0; step < 3; ++step) exe.Run({}, {m.loss.name});
  EXPECT_TRUE(reader->met()) << "a place's read waited 2 s for the other's";
  EXPECT_GE(reader->threads(), 2u);
}

TEST(InputPipelineTest, ReadPastTheEndOfAnEpochIsEndOfData) {
  for (int decode_threads : {1, 0}) {
    Model m;
    BuildModel(&m, true);
    Scope scope;
    Executor().Run(m.startup.desc(), &scope);
    auto pipeline = TargetPipeline(25, 1, decode_threads);
    scope.Var("reader")->set_object(pipeline);
    ExecutionStrategy strategy;
    strategy.num_threads = 2;
    ParallelExecutor exe(m.main.desc(), &scope, {.strategy = strategy});
    pipeline->StartEpoch(1);
    exe.Run({}, {m.loss.name});
    exe.Run({}, {m.loss.name});
    try {
      exe.Run({}, {m.loss.name});
      FAIL() << "a third batch of 25 from 50 examples should be end of data";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
      EXPECT_NE(std::string(e.what()).find("end of data"), std::string::npos) << e.what();
    }
    pipeline->StartEpoch(2);  // the executor stays usable
    EXPECT_NO_THROW(exe.Run({}, {m.loss.name}));
    const auto c = pipeline->counters();
    EXPECT_EQ(c.batches, 3);
  }
}

}  // namespace
}  // namespace rill
