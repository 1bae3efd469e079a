#include "actors/executor/stream_drainer.h"

#include <thread>

#include "actors/executor/actor_graph.h"
#include "actors/trace/trace_context.h"
#include "runtime/base/cpu_relax.h"

namespace rill {

Linger::Linger(std::chrono::microseconds limit, bool yield)
    : limit_(limit), yield_(yield), idle_since_(Clock::now()) {}

void Linger::Worked() {
  spins_ = 0;
  idle_since_ = Clock::now();
}

bool Linger::Wait() {
  if (yield_) {
    // A yield costs a system call, more than a clock read.
    std::this_thread::yield();
    return Clock::now() - idle_since_ <= limit_;
  }
  CpuRelax();
  // The clock is read once every 64 pauses: a read costs more than a pause.
  return ++spins_ % 64 != 0 || Clock::now() - idle_since_ <= limit_;
}

StreamDrainer::StreamDrainer(ActorGraph& graph, const std::vector<std::unique_ptr<Stream>>& streams,
                             IdleHelpers* helpers, std::chrono::microseconds linger,
                             bool oversubscribed, const std::atomic<bool>& shut_down)
    : graph_(graph),
      streams_(streams),
      helpers_(helpers),
      linger_(linger),
      oversubscribed_(oversubscribed),
      shut_down_(shut_down) {}

bool StreamDrainer::RunAvailable(Stream& stream) {
  bool ran = false;
  while (Task* task = stream.Next()) {
    graph_.Invoke(task, &stream);
    ran = true;
  }
  return ran;
}

void StreamDrainer::Drain(Stream& stream) {
  if (!stream.TryClaim()) return;
  do {
    Linger linger(linger_, oversubscribed_);
    while (true) {
      if (RunAvailable(stream) || HelpKernels()) {
        linger.Worked();
        continue;
      }
      if (shut_down_.load(std::memory_order_relaxed) || !linger.Wait()) break;
    }
  } while (ReleaseOrReclaim(stream));
}

bool StreamDrainer::ReleaseOrReclaim(Stream& stream) {
  if (stream.ReleaseOrReclaim()) return true;
  return helpers_ != nullptr && helpers_->HasOfferedParts() && stream.TryClaim();
}

void StreamDrainer::Help(const IterationSlot& slot, uint32_t generation, bool holding_home) {
  auto done = [&] {
    return slot.done.load(std::memory_order_acquire) ||
           slot.generation.load(std::memory_order_acquire) != generation;
  };
  Stream& home = *streams_[0];
  bool holding = holding_home;
  Linger linger(linger_, oversubscribed_);
  while (!done()) {
    bool worked = false;
    if (!holding) holding = home.TryClaim();
    if (holding) worked |= RunAvailable(home) || HelpKernels();
    for (size_t i = 1; i < streams_.size() && !done(); ++i) {
      Stream& s = *streams_[i];
      if (!s.HasQueuedWork()) continue;
      // One claim at a time: a kernel of `s` run here while the home stream
      // stays claimed would keep every thread that could take its parts
      // (ParallelFor) away, as they help only from a stream they hold.
      if (holding) {
        while (ReleaseOrReclaim(home)) worked |= RunAvailable(home) || HelpKernels();
        holding = false;
      }
      if (!s.TryClaim()) continue;
      do {
        worked |= RunAvailable(s) || HelpKernels();
      } while (ReleaseOrReclaim(s));
    }
    if (worked) {
      linger.Worked();
    } else if (!linger.Wait()) {
      break;
    }
  }
  if (holding) {
    while (ReleaseOrReclaim(home)) {
      if (!RunAvailable(home)) HelpKernels();
    }
  }
}

void StreamDrainer::WaitForProducers(const BuiltGraph::Node& node, const Stream& self) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
  for (int s : node.cross_stream_producers) {
    const Stream& producer = *streams_[s];
    if (&producer == &self) continue;
    auto busy = [&] { return producer.HasQueuedWork() || producer.running_node() >= 0; };
    if (!busy()) continue;
    TraceWait wait(WaitKind::kStream,
                   StrCat("stream ", producer.place(), ".", producer.index_in_place()));
    while (busy() && std::chrono::steady_clock::now() < deadline) CpuRelax();
  }
}

}  // namespace rill
