// Fibers of an ActorGraph iteration: Blocking() ops (channel_send/recv,
// while, select) run their kernels on the runtime's fiber pool, where waiting
// on a channel parks a fiber instead of a stream's thread; go blocks run there
// too, as parts of the iteration it waits for. Every failure closes the
// iteration's channels, so that nothing stays parked on one.
#include "actors/channels/fiber_pool.h"
#include "actors/executor/actor_graph.h"
#include "actors/executor/runtime_internals.h"
#include "actors/trace/trace_context.h"

namespace rill {

const proto::ProgramDesc& ActorGraph::SlotRun::program() const { return graph_->plan_.program; }

void ActorGraph::SlotRun::Go(std::string what, std::function<void()> body) {
  graph_->StartGo(*slot_, std::move(what), std::move(body));
}

void ActorGraph::SlotRun::OnFailure(std::function<void()> closer) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_) {
      closers_.push_back(std::move(closer));
      return;
    }
  }
  closer();
}

void ActorGraph::SlotRun::Progress() {
  graph_->fiber_progress_.fetch_add(1, std::memory_order_relaxed);
}

void ActorGraph::SlotRun::CloseAll() {
  std::vector<std::function<void()>> closers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    closers.swap(closers_);
  }
  for (auto& close : closers) close();
}

void ActorGraph::SlotRun::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = false;
  closers_.clear();
}

void ActorGraph::FailSlot(Slot& slot, std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(slot.error_mutex);
    if (!slot.error) slot.error = error;
    slot.cancelled.store(true, std::memory_order_relaxed);
  }
  slot.run->CloseAll();
}

void ActorGraph::EndOutstanding(Slot& slot) {
  if (slot.outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish(slot);
}

void ActorGraph::EndGraphPart(Slot& slot) {
  if (!slot.graph_ended.exchange(true, std::memory_order_acq_rel)) EndOutstanding(slot);
}

void ActorGraph::StartFiber(Task* task, Slot& slot, uint32_t generation) {
  if (slot.cancelled.load(std::memory_order_relaxed)) {
    Complete(task, slot, generation, nullptr);
    return;
  }
  // Read now: once the op completes, the iteration may end and the slot be reused.
  const TraceContext traced{slot.traced ? trace_ : nullptr,
                            slot.traced ? trace_lane(task->node) : 0, trace_graph_, slot.iteration,
                            0};
  // The inline attempt: done without a fiber when nothing needs waiting for.
  if (const TryKernelFn* attempt = nodes_[task->node].try_kernel) {
    const int64_t began = traced.recorder ? TraceRecorder::Now() : 0;
    bool done = true;  // a failed attempt is done too: the iteration has failed
    RunOrFail(slot, task->node, [&] { done = (*attempt)(*task->context); });
    if (done) {
      if (traced.recorder) {
        TraceSpan(TraceEventKind::kKernel, traced.lane, task->node, -1, began, slot);
      }
      Complete(task, slot, generation, nullptr);
      if (traced.recorder) CurrentTrace() = {};
      return;
    }
  }
  slot.outstanding.fetch_add(1, std::memory_order_acq_rel);
  fibers_running_.fetch_add(1, std::memory_order_acq_rel);
  // The fiber keeps the graph alive: it may end after a Shutdown gave up on it.
  FiberPoolOf(*runtime_).Spawn([self = shared_from_this(), task, &slot, generation, traced] {
    const int64_t began = traced.recorder ? TraceRecorder::Now() : 0;
    // Its channel waits are recorded on its lane (the context is the fiber's
    // thread's: set again by whichever fiber runs next there).
    if (traced.recorder) CurrentTrace() = traced;
    self->RunOrFail(slot, task->node, [task] { (*task->kernel)(*task->context); });
    if (traced.recorder) {
      self->TraceSpan(TraceEventKind::kKernel, traced.lane, task->node, -1, began, slot);
    }
    self->fibers_running_.fetch_sub(1, std::memory_order_acq_rel);
    self->fiber_progress_.fetch_add(1, std::memory_order_relaxed);
    // After an abort the graph's countdowns are stale: pass nothing on.
    if (!slot.aborted.load(std::memory_order_acquire))
      self->Complete(task, slot, generation, nullptr);
    if (traced.recorder) CurrentTrace() = {};
    self->EndOutstanding(slot);
  });
}

void ActorGraph::StartGo(Slot& slot, std::string what, std::function<void()> body) {
  slot.outstanding.fetch_add(1, std::memory_order_acq_rel);
  fibers_running_.fetch_add(1, std::memory_order_acq_rel);
  FiberPoolOf(*runtime_).Spawn(
      [self = shared_from_this(), &slot, what = std::move(what), body = std::move(body)] {
        CurrentTrace() = {};  // a go block has no lane of its own
        if (std::exception_ptr error = RunGoBody(what, body)) self->FailSlot(slot, error);
        self->fibers_running_.fetch_sub(1, std::memory_order_acq_rel);
        self->fiber_progress_.fetch_add(1, std::memory_order_relaxed);
        self->EndOutstanding(slot);
      });
}

}  // namespace rill
