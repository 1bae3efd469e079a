// Computes a Summary from an indexed trace.
#include "tools/rill/trace_summary.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "rill/error.h"

namespace rill::trace {
namespace {

// Work that keeps a lane busy: kernels and collective nodes.
bool IsBusy(const TraceEvent& e) {
  return e.phase == "X" && (e.category == "kernel" || e.category == "collective");
}

bool IsKernel(const TraceEvent& e) { return e.phase == "X" && e.category == "kernel"; }

double Ratio(double part, double whole) { return whole > 0 ? part / whole : 0; }

// The length of the union of [start, end) intervals.
double UnionLength(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0;
  double covered_to = -std::numeric_limits<double>::infinity();
  for (const auto& [start, end] : intervals) {
    if (end <= covered_to) continue;
    total += end - std::max(start, covered_to);
    covered_to = end;
  }
  return total;
}

void MeasureSpan(const Trace& trace, Summary* summary) {
  if (trace.events.empty()) return;
  double start = std::numeric_limits<double>::infinity();
  double end = -std::numeric_limits<double>::infinity();
  for (const TraceEvent& e : trace.events) {
    start = std::min(start, e.ts);
    end = std::max(end, e.end());
  }
  summary->start_us = start;
  summary->end_us = end;
  summary->span_us = end - start;
}

std::vector<LaneUsage> LaneUsages(const Trace& trace, double span_us) {
  std::map<int64_t, std::vector<std::pair<double, double>>> busy;  // by tid
  std::map<int64_t, int64_t> pids;
  for (const TraceEvent& e : trace.events) {
    if (!IsBusy(e)) continue;
    busy[e.tid].push_back({e.ts, e.end()});
    pids[e.tid] = e.pid;
  }
  std::vector<LaneUsage> lanes;
  for (auto& [tid, intervals] : busy) {
    LaneUsage lane;
    lane.pid = pids[tid];
    lane.tid = tid;
    lane.name = trace.LaneName(tid);
    if (const auto it = trace.lanes.find(tid); it != trace.lanes.end()) lane.kind = it->second.kind;
    lane.events = static_cast<int64_t>(intervals.size());
    lane.busy_us = UnionLength(std::move(intervals));
    lane.utilisation = Ratio(lane.busy_us, span_us);
    lanes.push_back(std::move(lane));
  }
  std::stable_sort(lanes.begin(), lanes.end(),
                   [](const LaneUsage& a, const LaneUsage& b) { return a.busy_us > b.busy_us; });
  return lanes;
}

std::vector<StreamUsage> StreamUsages(const Trace& trace, double span_us) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, StreamUsage> streams;
  for (const TraceEvent& e : trace.events) {
    if (!IsKernel(e) || e.stream == kNone) continue;
    StreamUsage& stream = streams[{e.pid, e.place, e.stream}];
    stream.pid = e.pid;
    stream.place = e.place;
    stream.stream = e.stream;
    stream.kernels += 1;
    stream.kernel_us += e.dur;
  }
  std::vector<StreamUsage> out;
  for (auto& [key, stream] : streams) {
    stream.utilisation = Ratio(stream.kernel_us, span_us);
    out.push_back(stream);
  }
  std::stable_sort(out.begin(), out.end(), [](const StreamUsage& a, const StreamUsage& b) {
    return a.kernel_us > b.kernel_us;
  });
  return out;
}

std::vector<MessageStats> Messages(const Trace& trace) {
  std::map<std::string, MessageStats> kinds;
  for (const TraceEvent& e : trace.events) {
    if (e.phase != "s" || e.category != "message") continue;
    MessageStats& kind = kinds[e.name];
    kind.kind = e.name;
    kind.count += 1;
    kind.bytes += e.bytes;
  }
  std::vector<MessageStats> out;
  for (auto& [name, kind] : kinds) out.push_back(kind);
  std::stable_sort(out.begin(), out.end(),
                   [](const MessageStats& a, const MessageStats& b) { return a.count > b.count; });
  return out;
}

// Gradient merges are the kernel-lane X events with args.raw_bytes (a
// collective's span); sent gradients the `send` events of cat network.
std::vector<GradientBytes> GradientBytesOf(const Trace& trace) {
  GradientBytes merge{"merge"}, send{"send"};
  for (const TraceEvent& e : trace.events) {
    if (e.raw_bytes == kNone) continue;
    if (e.phase != "X") continue;
    GradientBytes* kind = e.category == "network" ? &send : &merge;
    kind->count += 1;
    kind->raw_bytes += e.raw_bytes;
    kind->bytes += e.bytes;
  }
  std::vector<GradientBytes> out;
  for (const GradientBytes& kind : {merge, send}) {
    if (kind.count > 0) out.push_back(kind);
  }
  return out;
}

std::vector<WaitStats> Waits(const Trace& trace) {
  std::map<std::tuple<int64_t, int64_t, std::string>, WaitStats> groups;
  for (const TraceEvent& e : trace.events) {
    if (e.phase != "X" || e.category != "wait") continue;
    const int64_t input = e.pid / kMergedPidStride;
    WaitStats& wait = groups[{input, e.place, e.name}];
    wait.input = input;
    wait.place = e.place;
    wait.name = e.name;
    wait.count += 1;
    wait.total_us += e.dur;
  }
  std::vector<WaitStats> out;
  for (auto& [key, wait] : groups) out.push_back(wait);
  std::stable_sort(out.begin(), out.end(),
                   [](const WaitStats& a, const WaitStats& b) { return a.total_us > b.total_us; });
  return out;
}

std::vector<OpStats> Ops(const Trace& trace, double* kernel_us) {
  std::map<std::string, OpStats> types;
  for (const TraceEvent& e : trace.events) {
    if (!IsKernel(e)) continue;
    // The name, not args.type: a collective's chunks ("allreduce chunk") share
    // args.type with the collective's own event, which spans them.
    const std::string& type = e.name.empty() ? e.type : e.name;
    OpStats& op = types[type];
    op.type = type;
    op.count += 1;
    op.total_us += e.dur;
    *kernel_us += e.dur;
  }
  std::vector<OpStats> out;
  for (auto& [type, op] : types) {
    op.share = Ratio(op.total_us, *kernel_us);
    out.push_back(op);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const OpStats& a, const OpStats& b) { return a.total_us > b.total_us; });
  return out;
}

std::optional<IterationStats> Iterations(const Trace& trace, int64_t graph) {
  std::vector<double> durations;
  for (const TraceEvent& e : trace.events) {
    if (e.phase == "X" && e.category == "iteration" && e.graph == graph) {
      durations.push_back(e.dur);
    }
  }
  if (durations.empty()) return std::nullopt;
  std::sort(durations.begin(), durations.end());
  IterationStats stats;
  stats.graph = graph;
  stats.count = static_cast<int64_t>(durations.size());
  stats.median_us = durations[(durations.size() - 1) / 2];
  stats.min_us = durations.front();
  stats.max_us = durations.back();
  for (double d : durations) stats.mean_us += d;
  stats.mean_us /= static_cast<double>(durations.size());
  return stats;
}

void AddCriticalPath(const Trace& trace, const SummaryOptions& options, Summary* summary) {
  if (trace.graphs.count(options.graph) == 0) {
    RILL_CHECK(!options.path_requested, kNotFound, trace.path, ": no graph ", options.graph,
               " in rill.graphs (", GraphIds(trace), ")");
    summary->critical_path_note = StrCat("no graph ", options.graph, " in rill.graphs");
    return;
  }
  try {
    const int64_t iteration =
        options.iteration != kNone ? options.iteration : MedianIteration(trace, options.graph);
    summary->critical_path = FindCriticalPath(trace, options.graph, iteration, options.path_edges);
  } catch (const Error& e) {
    if (options.path_requested || e.code() != ErrorCode::kNotFound) throw;
    summary->critical_path_note = e.message();
  }
}

}  // namespace

Summary Summarize(const Trace& trace, const SummaryOptions& options) {
  Summary summary;
  summary.path = trace.path;
  summary.events = static_cast<int64_t>(trace.events.size());
  summary.dropped_events = trace.dropped_events;
  summary.inputs = trace.inputs;
  summary.process_names = trace.process_names;
  MeasureSpan(trace, &summary);
  summary.lanes = LaneUsages(trace, summary.span_us);
  summary.streams = StreamUsages(trace, summary.span_us);
  summary.messages = Messages(trace);
  summary.gradient_bytes = GradientBytesOf(trace);
  summary.waits = Waits(trace);
  summary.ops = Ops(trace, &summary.kernel_us);
  summary.iterations = Iterations(trace, options.graph);
  AddCriticalPath(trace, options, &summary);
  summary.time_split = SplitParallelTime(trace, options.graph);
  return summary;
}

}  // namespace rill::trace
