#include "actors/executor/watchdog.h"

#include <caf/send.hpp>

#include "actors/executor/messages.h"
#include "rill/log.h"

namespace rill {

Watchdog::Watchdog(const BuiltGraph& graph, const std::vector<std::unique_ptr<Stream>>& streams,
                   const std::vector<std::unique_ptr<IterationSlot>>& slots, const AsyncOps& async,
                   const ExecutionStrategy& strategy, AbortFn abort)
    : graph_(graph),
      streams_(streams),
      slots_(slots),
      async_(async),
      strategy_(strategy),
      abort_(std::move(abort)),
      last_change_(Clock::now()) {}

bool Watchdog::AnyKernelRunning() const {
  if (async_.blocks_running() > 0) return true;
  for (const auto& s : streams_) {
    if (s->running_node() >= 0) return true;
  }
  return false;
}

std::string Watchdog::StallReport(const IterationSlot& slot) const {
  const uint32_t generation = slot.generation.load(std::memory_order_acquire);
  auto not_run = [&](int id) { return slot.tasks[id].countdown.generation() == generation; };
  std::string report;
  int listed = 0;
  for (const OpNode& op : graph_.ssa.ops) {
    if (!not_run(op.id) || slot.tasks[op.id].countdown.remaining() == 0) continue;
    // Report ops whose missing producers are not waiting themselves: the frontier.
    std::vector<int> missing;
    bool frontier = true;
    for (int pred : op.predecessors) {
      if (!not_run(pred)) continue;
      missing.push_back(pred);
      frontier &= slot.tasks[pred].countdown.remaining() == 0;
    }
    if (!frontier || missing.empty()) continue;
    if (++listed > 20) {
      report += "  ...\n";
      break;
    }
    report += StrCat("  ", graph_.Describe(op.id), " waits for:\n");
    for (int pred : missing) {
      std::string what;
      for (int var : op.inputs) {
        const VarNode& v = graph_.ssa.vars[var];
        if (v.producer != pred) continue;
        if (!what.empty()) what += ", ";
        what += v.control ? std::string("a control edge") : StrCat("input \"", v.name, "\"");
      }
      report += StrCat("    ", what, " from ", graph_.Describe(pred), ", which never ran\n");
    }
  }
  if (report.empty()) report = "  (no op waits on a missing producer)\n";
  return report;
}

void Watchdog::Emit(const std::string& text) const {
  if (strategy_.on_watchdog_report) {
    strategy_.on_watchdog_report(text);
  } else {
    Log(LogLevel::kWarning, "watchdog: ", text);
  }
}

void Watchdog::Tick(int in_flight) {
  const auto now = Clock::now();
  if (in_flight == 0) {
    last_change_ = now;
    reported_ = false;
    return;
  }
  uint64_t progress = async_.progress();
  for (const auto& s : streams_) progress += s->executed();
  if (progress != progress_) {
    progress_ = progress;
    last_change_ = now;
    reported_ = false;
    return;
  }
  auto since = last_change_;
  for (const auto& slot : slots_) {
    if (!slot->busy.load(std::memory_order_acquire)) continue;
    const Clock::time_point started(
        Clock::duration(slot->started_ns.load(std::memory_order_acquire)));
    since = std::max(since, started);
  }
  const auto stalled = std::chrono::duration_cast<std::chrono::milliseconds>(now - since);
  if (stalled < strategy_.watchdog_timeout) return;
  if (AnyKernelRunning()) {  // slow, not stuck: say so once
    if (!reported_) {
      std::string text = StrCat("no op finished for ", stalled.count(), " ms; running now:\n");
      for (const auto& s : streams_) {
        if (s->running_node() >= 0) text += StrCat("  ", graph_.Describe(s->running_node()), "\n");
      }
      const int blocks = async_.blocks_running();
      if (blocks > 0) text += StrCat("  ", blocks, " block op(s) (parallel_do) on their places\n");
      Emit(text);
      reported_ = true;
    }
    return;
  }
  bool queued = false;
  for (const auto& s : streams_) {
    if (s->HasQueuedWork()) {
      queued = true;
      if (!s->claimed()) caf::anon_send(s->actor(), wake_atom::value);
    }
  }
  if (queued) return;  // work is waiting for a thread: woken, look again next tick
  for (const auto& slot : slots_) {
    if (!slot->busy.load(std::memory_order_acquire) || slot->done.load()) continue;
    const std::string why = StrCat("iteration made no progress for ", stalled.count(),
                                   " ms (watchdog); ops still waiting:\n", StallReport(*slot));
    Emit(why);
    abort_(*slot, why);
  }
  last_change_ = now;
}

}  // namespace rill
