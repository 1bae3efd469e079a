#include "tools/rill/trace_parallel_split.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace rill::trace {
namespace {

struct Iteration {
  double start = 0;
  double end = 0;
  // Kernel intervals by place.
  std::map<int64_t, std::vector<std::pair<double, double>>> kernels;
};

bool IsPlaceKernel(const TraceEvent& e) {
  return e.phase == "X" && e.category == "kernel" && e.place >= 0;
}

// Cuts [first kernel, last kernel] of one iteration by how many places run a
// kernel, adding to the split.
void SweepPlaces(const Iteration& it, int64_t places, ParallelSplit* split) {
  std::vector<std::pair<double, int>> edges;  // (time, +1 start / -1 end) per place's union
  for (const auto& [place, intervals] : it.kernels) {
    std::vector<std::pair<double, double>> sorted = intervals;
    std::sort(sorted.begin(), sorted.end());
    double open = sorted.front().first, close = sorted.front().second;
    for (const auto& [start, end] : sorted) {
      if (start > close) {
        edges.emplace_back(open, 1);
        edges.emplace_back(close, -1);
        open = start;
      }
      close = std::max(close, end);
    }
    edges.emplace_back(open, 1);
    edges.emplace_back(close, -1);
  }
  std::sort(edges.begin(), edges.end());  // at a tie, ends (-1) before starts
  int busy = 0;
  double last = edges.front().first;
  for (const auto& [time, delta] : edges) {
    const double length = time - last;
    if (busy >= places) {
      split->all_places_us += length;
    } else if (busy > 0) {
      split->some_places_us += length;
    } else {
      split->no_place_us += length;
    }
    busy += delta;
    last = time;
  }
}

}  // namespace

std::optional<ParallelSplit> SplitParallelTime(const Trace& trace, int64_t graph) {
  std::map<int64_t, Iteration> iterations;
  for (const TraceEvent& e : trace.events) {
    if (e.phase == "X" && e.category == "iteration" && e.graph == graph && e.iteration >= 0) {
      iterations[e.iteration].start = e.ts;
      iterations[e.iteration].end = e.end();
    }
  }
  std::set<int64_t> places;
  ParallelSplit split;
  split.graph = graph;
  for (const TraceEvent& e : trace.events) {
    if (e.graph != graph || !iterations.count(e.iteration)) continue;
    if (IsPlaceKernel(e)) {
      iterations[e.iteration].kernels[e.place].push_back({e.ts, e.end()});
      places.insert(e.place);
      split.kernel_us += e.dur;
      if (e.name == "allreduce chunk") split.merge_us += e.dur;
    } else if (e.phase == "X" && e.category == "wait" && e.name == "barrier") {
      split.barrier_us += e.dur;
    }
  }
  if (places.empty()) return std::nullopt;
  split.places = static_cast<int64_t>(places.size());
  int64_t previous = -1;  // the last iteration counted
  double previous_end = 0;
  for (const auto& [index, it] : iterations) {
    if (it.kernels.empty() || it.end <= it.start) continue;
    ++split.iterations;
    double first = it.end, last = it.start;
    for (const auto& [place, intervals] : it.kernels) {
      for (const auto& [start, end] : intervals) {
        first = std::min(first, start);
        last = std::max(last, end);
      }
    }
    first = std::max(first, it.start);
    last = std::min(last, it.end);
    split.before_first_us += first - it.start;
    split.after_last_us += std::max(0.0, it.end - last);
    SweepPlaces(it, split.places, &split);
    split.total_us += it.end - it.start;
    // Only a gap to the previous traced iteration counts: an iteration left
    // out (not traced, or without kernels) would make it the driver's.
    if (previous >= 0 && index == previous + 1 && it.start > previous_end) {
      split.between_us += it.start - previous_end;
      split.total_us += it.start - previous_end;
    }
    previous = index;
    previous_end = it.end;
  }
  if (split.iterations == 0) return std::nullopt;
  return split;
}

}  // namespace rill::trace
