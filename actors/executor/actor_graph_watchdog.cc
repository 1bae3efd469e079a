// The watchdog's view of an ActorGraph: naming nodes in messages, finding the
// ops an iteration is stuck on, and the periodic check itself.
#include <caf/send.hpp>
#include <iostream>

#include "actors/executor/actor_graph.h"
#include "actors/executor/messages.h"

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::string ActorGraph::DescribeNode(int id) const {
  const OpNode& op = graph_.ops[id];
  if (op.kind == OpNodeKind::kCollective) {
    return StrCat("block ", block_index_, ", op ", op.op_index, " (", op.type, " #", op.collective,
                  " over ", places(), " places)");
  }
  std::string where = StrCat(" on ", places_[op.place].ToString());
  if (places() > 1) where += StrCat(" place ", op.place);
  where += StrCat(" stream ", op.stream);
  if (op.kind == OpNodeKind::kFeed) {
    return StrCat("feed \"", graph_.vars[op.outputs[0]].name, "\"", where);
  }
  return StrCat("block ", block_index_, ", op ", op.op_index, " (", op.type, ")", where);
}

bool ActorGraph::AnyKernelRunning() const {
  if (blocks_running_.load(std::memory_order_acquire) > 0) return true;
  for (const auto& s : streams_) {
    if (s->running_node() >= 0) return true;
  }
  return false;
}

std::string ActorGraph::StallReport(Slot& slot) const {
  const uint32_t generation = slot.generation.load(std::memory_order_acquire);
  auto not_run = [&](int id) { return slot.tasks[id].countdown.generation() == generation; };
  std::string report;
  int listed = 0;
  for (const OpNode& op : graph_.ops) {
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
    report += StrCat("  ", DescribeNode(op.id), " waits for:\n");
    for (int pred : missing) {
      std::string what;
      for (int var : op.inputs) {
        const VarNode& v = graph_.vars[var];
        if (v.producer != pred) continue;
        if (!what.empty()) what += ", ";
        what += v.control ? std::string("a control edge") : StrCat("input \"", v.name, "\"");
      }
      report += StrCat("    ", what, " from ", DescribeNode(pred), ", which never ran\n");
    }
  }
  if (report.empty()) report = "  (no op waits on a missing producer)\n";
  return report;
}

void ActorGraph::WatchdogTick() {
  const auto now = Clock::now();
  if (in_flight_.load(std::memory_order_acquire) == 0) {
    watchdog_last_change_ = now;
    watchdog_reported_ = false;
    return;
  }
  uint64_t progress = 0;
  for (const auto& s : streams_) progress += s->executed();
  progress += fiber_progress_.load(std::memory_order_relaxed);
  if (progress != watchdog_progress_) {
    watchdog_progress_ = progress;
    watchdog_last_change_ = now;
    watchdog_reported_ = false;
    return;
  }
  auto since = watchdog_last_change_;
  for (const auto& slot : slots_) {
    if (!slot->busy.load(std::memory_order_acquire)) continue;
    const Clock::time_point started(
        Clock::duration(slot->started_ns.load(std::memory_order_acquire)));
    since = std::max(since, started);
  }
  const auto stalled = std::chrono::duration_cast<std::chrono::milliseconds>(now - since);
  if (stalled < strategy_.watchdog_timeout) return;
  auto emit = [this](const std::string& text) {
    if (strategy_.on_watchdog_report) {
      strategy_.on_watchdog_report(text);
    } else {
      std::cerr << "rill watchdog: " << text;
    }
  };
  if (AnyKernelRunning()) {  // slow, not stuck: say so once
    if (!watchdog_reported_) {
      std::string text = StrCat("no op finished for ", stalled.count(), " ms; running now:\n");
      for (const auto& s : streams_) {
        if (s->running_node() >= 0) text += StrCat("  ", DescribeNode(s->running_node()), "\n");
      }
      const int blocks = blocks_running_.load(std::memory_order_acquire);
      if (blocks > 0) text += StrCat("  ", blocks, " block op(s) (parallel_do) on their places\n");
      emit(text);
      watchdog_reported_ = true;
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
  for (auto& slot : slots_) {
    if (!slot->busy.load(std::memory_order_acquire) || slot->done.load()) continue;
    const std::string why = StrCat("iteration made no progress for ", stalled.count(),
                                   " ms (watchdog); ops still waiting:\n", StallReport(*slot));
    emit(why);
    Abort(*slot, why);
  }
  watchdog_last_change_ = now;
}

}  // namespace rill
