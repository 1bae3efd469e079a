#include "rill/input_pipeline.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

#include "runtime/base/thread_priority.h"
#include "runtime/core/place_io.h"

namespace rill {

InputPipeline::InputPipeline(std::shared_ptr<const BatchSource> source, Options options)
    : source_(std::move(source)), options_(options) {
  RILL_CHECK(source_ != nullptr, kInvalidArgument, "an input pipeline needs a source");
  RILL_CHECK(options_.batch >= 1 && options_.places >= 1 && options_.decode_threads >= 0 &&
                 options_.prefetch >= 0,
             kInvalidArgument, "input pipeline: batch and places must be >= 1, ",
             "decode threads and prefetch >= 0 (got batch ", options_.batch, ", places ",
             options_.places, ", decode threads ", options_.decode_threads, ", prefetch ",
             options_.prefetch, ")");
  RILL_CHECK(options_.batch >= options_.places, kInvalidArgument, "input pipeline: a batch of ",
             options_.batch, " cannot be split over ", options_.places, " places");
}

InputPipeline::~InputPipeline() { Stop(); }

std::string InputPipeline::Describe() const {
  return StrCat("input pipeline (", source_->size(), " examples, batch ", options_.batch, ", ",
                options_.places, " place(s))");
}

int64_t InputPipeline::steps_per_epoch() const {
  int64_t steps = (source_->size() + options_.batch - 1) / options_.batch;
  if (options_.max_batches >= 0) steps = std::min(steps, options_.max_batches);
  return steps;
}

void InputPipeline::StartEpoch(int epoch) {
  Stop();
  std::lock_guard<std::mutex> lock(mutex_);
  order_.resize(static_cast<size_t>(source_->size()));
  std::iota(order_.begin(), order_.end(), 0);
  if (options_.shuffle) {
    std::mt19937_64 shuffle(options_.seed * 1000003 + static_cast<uint64_t>(epoch));
    std::shuffle(order_.begin(), order_.end(), shuffle);
  }
  steps_ = steps_per_epoch();
  channels_.clear();
  for (int p = 0; p < options_.places; ++p) {
    channels_.push_back(
        std::make_shared<Channel<PipelineBatch>>(static_cast<size_t>(options_.prefetch)));
  }
  next_decode_.store(0);
  next_deliver_ = 0;
  next_inline_.assign(static_cast<size_t>(options_.places), 0);
  stopping_ = false;
  for (int t = 0; t < options_.decode_threads; ++t) {
    decoders_.emplace_back([this] { DecodeLoop(); });
  }
}

// Each decoder takes the next undecoded batch, decodes it while the others
// do theirs, then waits for its turn so that batches arrive in order.
void InputPipeline::DecodeLoop() {
  LowerCurrentThreadPriority(options_.decode_nice);
  std::vector<std::shared_ptr<Channel<PipelineBatch>>> channels;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    channels = channels_;
  }
  while (true) {
    const int64_t step = next_decode_.fetch_add(1);
    if (step >= steps_) return;
    const int64_t begin = step * options_.batch;
    const int64_t end =
        std::min<int64_t>(begin + options_.batch, static_cast<int64_t>(order_.size()));
    std::vector<int64_t> indices(order_.begin() + begin, order_.begin() + end);
    std::vector<Tensor> fields = source_->Decode(indices);
    decoded_.fetch_add(1, std::memory_order_relaxed);
    const std::vector<int64_t> rows = SplitRows(end - begin, options_.places);
    std::vector<std::vector<Tensor>> slices(static_cast<size_t>(options_.places));
    for (const Tensor& field : fields) {
      std::vector<Tensor> parts =
          options_.places == 1 ? std::vector<Tensor>{field} : SplitBatch(field, rows);
      for (int p = 0; p < options_.places; ++p) slices[p].push_back(parts[p]);
    }
    {
      std::unique_lock<std::mutex> lock(mutex_);
      turn_.wait(lock, [&] { return next_deliver_ == step || stopping_; });
      if (stopping_) return;
    }
    // Only this decoder delivers now; a full channel makes it wait (the
    // prefetch bound), and Stop() closes the channels to end that wait.
    for (int p = 0; p < options_.places; ++p) {
      if (channels[p]->Send(PipelineBatch{std::move(slices[p]), step}) != ChannelStatus::kOk)
        return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++next_deliver_;
    if (next_deliver_ == steps_) {
      for (auto& c : channels) c->Close();  // the end of the epoch
    }
    turn_.notify_all();
  }
}

bool InputPipeline::Next(int place, PipelineBatch* out) {
  bool ended = false;
  if (TryNext(place, out, &ended)) return true;
  if (ended) return false;
  const auto start = std::chrono::steady_clock::now();
  const bool ok = channel(place)->Recv(out) == ChannelStatus::kOk;
  if (ok) {
    CountTaken(false, std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count());
  }
  return ok;
}

bool InputPipeline::TryNext(int place, PipelineBatch* out, bool* ended) {
  if (options_.decode_threads == 0) return DecodeInline(place, out, ended);
  const ChannelStatus status = channel(place)->TryRecv(out);
  *ended = status == ChannelStatus::kClosed;
  if (status != ChannelStatus::kOk) return false;
  CountTaken(true, 0);
  return true;
}

bool InputPipeline::DecodeInline(int place, PipelineBatch* out, bool* ended) {
  int64_t step = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    RILL_CHECK(!next_inline_.empty(), kInvalidArgument, Describe(),
               ": no epoch started (StartEpoch)");
    RILL_CHECK(place >= 0 && place < options_.places, kOutOfRange, Describe(), ": no place ",
               place);
    step = next_inline_[static_cast<size_t>(place)];
    *ended = stopping_ || step >= steps_;
    if (*ended) return false;
    ++next_inline_[static_cast<size_t>(place)];
  }
  // The place's rows of the step, as SplitBatch cuts the whole batch: the same
  // examples in the same order as a decode thread would deliver.
  const int64_t begin = step * options_.batch;
  const int64_t end =
      std::min<int64_t>(begin + options_.batch, static_cast<int64_t>(order_.size()));
  const PlaceRows mine = RowsOfPlace(end - begin, options_.places, place);
  const auto first = order_.begin() + begin + mine.begin;
  out->fields = source_->Decode(std::vector<int64_t>(first, first + mine.count));
  out->step = step;
  out->decoded_here = true;
  if (place == 0) decoded_.fetch_add(1, std::memory_order_relaxed);
  CountTaken(true, 0);
  return true;
}

std::shared_ptr<Channel<PipelineBatch>> InputPipeline::channel(int place) const {
  std::lock_guard<std::mutex> lock(mutex_);
  RILL_CHECK(!channels_.empty(), kInvalidArgument, Describe(), ": no epoch started (StartEpoch)");
  RILL_CHECK(place >= 0 && place < static_cast<int>(channels_.size()), kOutOfRange, Describe(),
             ": no place ", place);
  return channels_[static_cast<size_t>(place)];
}

void InputPipeline::Stop() {
  std::vector<std::thread> decoders;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (auto& c : channels_) c->Close();
    decoders.swap(decoders_);
  }
  turn_.notify_all();
  for (auto& t : decoders) t.join();
}

void InputPipeline::CountTaken(bool was_ready, int64_t wait_ns) {
  batches_.fetch_add(1, std::memory_order_relaxed);
  (was_ready ? ready_ : waited_).fetch_add(1, std::memory_order_relaxed);
  wait_ns_.fetch_add(wait_ns, std::memory_order_relaxed);
}

InputPipeline::Counters InputPipeline::counters() const {
  return {batches_.load(), ready_.load(), waited_.load(), wait_ns_.load(), decoded_.load()};
}

}  // namespace rill
