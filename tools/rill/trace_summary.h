// What a trace says about a run (`rill trace summarize`): how busy each lane
// and stream was, the messages sent, the time spent waiting, the ops that
// took the most kernel time, and the critical path of one iteration.
//
// Busy time of a lane: the union of its `X` events of cat `kernel` or
// `collective`. Utilisation: busy / the trace's span (first ts to last
// ts + dur over all non-metadata events). A stream's time is the sum of the
// kernels with that (pid, args.place, args.stream); kernels without
// args.stream count for no stream.
//
// SummaryToJson writes one object with these keys (times in µs, ratios 0..1):
//   file, events, dropped_events, inputs (rill.inputs of a merged file, else []),
//   start_us, end_us, span_us, kernel_us (sum of all kernel durations),
//   lanes:    [{pid, tid, name, kind, process, events, busy_us, utilisation}], by busy_us
//   streams:  [{pid, place, stream, name ("stream P.S"), process, kernels, kernel_us,
//               utilisation}], by kernel_us
//   messages: [{kind, count, bytes}], by count
//   gradient_bytes: [{kind, count, raw_bytes, bytes, ratio}]: gradient merges ("merge",
//             the places' contributions) and gradients sent to servers ("send"), as
//             float32 (raw_bytes) and as merged or sent (bytes: compressed); ratio =
//             bytes / raw_bytes. Empty when the trace has none.
//   waits:    [{input, place, name, count, total_us, mean_us}], by total_us; input is the
//             merged input (pid / 1000), 0 in a file that is not merged
//   ops:      [{type, count, total_us, mean_us, share}], the top K by total_us; type is
//             the kernel's name: the op type, or "allreduce chunk" for a collective's chunk
//   op_types: how many op types there are in all
//   iterations: {graph, count, median_us, mean_us, min_us, max_us} or null
//   critical_path: {graph, iteration, stream_order, length_us, iteration_us (null without
//                  an `iteration` event), kernels_us, waits_us,
//                  nodes: [{node, type, place, stream, start_us, dur_us, wait_us, via}]}
//                  or null; start_us is from the iteration's start; via: "edge", "stream"
//                  or "" (trace_critical_path.h)
//   critical_path_note: why critical_path is null (absent otherwise)
//   time_split: {graph, iterations, places, total_us, between_us, before_first_us,
//               after_last_us, all_places_us, some_places_us, no_place_us, kernel_us,
//               merge_us, barrier_us, serial_fraction} or null (trace_parallel_split.h)
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/rill/trace_critical_path.h"
#include "tools/rill/trace_file.h"
#include "tools/rill/trace_parallel_split.h"

namespace rill::trace {

struct LaneUsage {
  int64_t pid = 0;
  int64_t tid = 0;
  std::string name;
  std::string kind;
  int64_t events = 0;
  double busy_us = 0;
  double utilisation = 0;
};

struct StreamUsage {
  int64_t pid = 0;
  int64_t place = 0;
  int64_t stream = 0;
  int64_t kernels = 0;
  double kernel_us = 0;
  double utilisation = 0;
};

struct MessageStats {
  std::string kind;
  int64_t count = 0;
  int64_t bytes = 0;
};

struct GradientBytes {
  std::string kind;  // merge, send
  int64_t count = 0;
  int64_t raw_bytes = 0;
  int64_t bytes = 0;
};

struct WaitStats {
  int64_t input = 0;  // pid / kMergedPidStride: which input of a merged file
  int64_t place = kNone;
  std::string name;
  int64_t count = 0;
  double total_us = 0;
};

struct OpStats {
  std::string type;
  int64_t count = 0;
  double total_us = 0;
  double share = 0;  // of all kernel time
};

struct IterationStats {
  int64_t graph = 0;
  int64_t count = 0;
  double median_us = 0;  // the lower median
  double mean_us = 0;
  double min_us = 0;
  double max_us = 0;
};

struct SummaryOptions {
  int64_t graph = 0;
  int64_t iteration = kNone;  // kNone: MedianIteration
  PathEdges path_edges = PathEdges::kGraphAndStreamOrder;
  // With a graph or iteration the user chose, a missing one is an error;
  // with the defaults, the summary goes on without a critical path.
  bool path_requested = false;
  int top = 10;
};

struct Summary {
  std::string path;
  int64_t events = 0;
  int64_t dropped_events = 0;
  std::vector<std::string> inputs;
  std::map<int64_t, std::string> process_names;
  double start_us = 0;
  double end_us = 0;
  double span_us = 0;
  double kernel_us = 0;
  std::vector<LaneUsage> lanes;  // lanes with busy time, the busiest first
  std::vector<StreamUsage> streams;
  std::vector<MessageStats> messages;
  std::vector<GradientBytes> gradient_bytes;
  std::vector<WaitStats> waits;
  std::vector<OpStats> ops;  // every op type, the most kernel time first
  std::optional<IterationStats> iterations;
  std::optional<CriticalPath> critical_path;
  std::string critical_path_note;  // why there is none
  std::optional<ParallelSplit> time_split;
};

// Throws rill::Error kNotFound for a graph or iteration the options ask for
// that is not in the trace.
Summary Summarize(const Trace& trace, const SummaryOptions& options);

// The summary as text tables; lanes and ops limited to the `top` first.
void WriteSummaryText(const Summary& summary, int top, std::ostream& out);
// The keys at the top of this file; ops limited to the `top` first.
nlohmann::json SummaryToJson(const Summary& summary, int top);

}  // namespace rill::trace
