// Walks an iteration's ops back from the one that ended last.
#include "tools/rill/trace_critical_path.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "rill/error.h"

namespace rill::trace {
namespace {

// A stream of a place: (pid, args.place, args.stream).
using StreamKey = std::tuple<int64_t, int64_t, int64_t>;

struct NodeSpan {
  double start = std::numeric_limits<double>::infinity();
  double end = -std::numeric_limits<double>::infinity();
  const TraceEvent* first = nullptr;  // describes the node when rill.graphs does not
  std::set<StreamKey> streams;        // where its kernels ran
};

bool IsNodeWork(const TraceEvent& e) {
  return e.phase == "X" && e.node != kNone &&
         (e.category == "kernel" || e.category == "collective");
}

bool IsIteration(const TraceEvent& e, int64_t graph) {
  return e.phase == "X" && e.category == "iteration" && e.graph == graph;
}

// The spans of the graph's nodes in one iteration, by node id.
std::map<int64_t, NodeSpan> NodeSpans(const Trace& trace, int64_t graph, int64_t iteration) {
  std::map<int64_t, NodeSpan> spans;
  for (const TraceEvent& e : trace.events) {
    if (!IsNodeWork(e) || e.graph != graph || e.iteration != iteration) continue;
    NodeSpan& span = spans[e.node];
    span.start = std::min(span.start, e.ts);
    span.end = std::max(span.end, e.end());
    if (span.first == nullptr) span.first = &e;
    if (e.stream != kNone) span.streams.insert({e.pid, e.place, e.stream});
  }
  return spans;
}

// Picks the predecessor a step of the walk goes back to.
class PredecessorFinder {
 public:
  PredecessorFinder(const TraceGraph& graph, const std::map<int64_t, NodeSpan>& spans,
                    PathEdges edges)
      : spans_(spans), stream_order_(edges == PathEdges::kGraphAndStreamOrder) {
    for (const GraphEdge& edge : graph.edges) predecessors_[edge.to].push_back(edge.from);
    for (const auto& [node, span] : spans) {
      for (const StreamKey& key : span.streams) occupants_[key].push_back(node);
    }
  }

  // The node that ended last among those that ran; kNone when none did.
  // Ties go to the lower node id.
  int64_t Last() const {
    int64_t best = kNone;
    for (const auto& [node, span] : spans_) best = Later(best, node);
    return best;
  }

  // The predecessor of `node` that ended last, and how it is one ("edge" or
  // "stream"); kNone when it has none that ran.
  std::pair<int64_t, const char*> Before(int64_t node) const {
    int64_t best = kNone;
    if (const auto it = predecessors_.find(node); it != predecessors_.end()) {
      for (int64_t from : it->second) best = Later(best, from);
    }
    if (!stream_order_) return {best, "edge"};
    // The previous occupant of one of its streams, when that ended later.
    const NodeSpan& span = spans_.at(node);
    int64_t previous = kNone;
    for (const StreamKey& key : span.streams) {
      for (int64_t other : occupants_.at(key)) {
        if (other != node && spans_.at(other).end <= span.start + kTimeSlack) {
          previous = Later(previous, other);
        }
      }
    }
    if (previous != kNone && (best == kNone || spans_.at(previous).end > spans_.at(best).end)) {
      return {previous, "stream"};
    }
    return {best, "edge"};
  }

 private:
  // Half a nanosecond: trace times have three decimals of a microsecond.
  static constexpr double kTimeSlack = 0.0005;

  // Whichever of a and b (kNone: none) ended later; b only if it ran.
  int64_t Later(int64_t a, int64_t b) const {
    const auto it = spans_.find(b);
    if (it == spans_.end()) return a;
    if (a == kNone) return b;
    const double a_end = spans_.at(a).end;
    const double b_end = it->second.end;
    return b_end > a_end || (b_end == a_end && b < a) ? b : a;
  }

  const std::map<int64_t, NodeSpan>& spans_;
  const bool stream_order_;
  std::map<int64_t, std::vector<int64_t>> predecessors_;
  std::map<StreamKey, std::vector<int64_t>> occupants_;
};

}  // namespace

int64_t MedianIteration(const Trace& trace, int64_t graph) {
  std::vector<std::pair<double, int64_t>> durations;  // (dur, iteration)
  for (const TraceEvent& e : trace.events) {
    if (IsIteration(e, graph) && e.iteration != kNone) durations.push_back({e.dur, e.iteration});
  }
  if (durations.empty()) {
    std::map<int64_t, NodeSpan> spans;  // by iteration
    for (const TraceEvent& e : trace.events) {
      if (!IsNodeWork(e) || e.graph != graph || e.iteration == kNone) continue;
      NodeSpan& span = spans[e.iteration];
      span.start = std::min(span.start, e.ts);
      span.end = std::max(span.end, e.end());
    }
    for (const auto& [iteration, span] : spans) {
      durations.push_back({span.end - span.start, iteration});
    }
  }
  RILL_CHECK(!durations.empty(), kNotFound, trace.path, ": graph ", graph,
             " has no iteration events and no kernels");
  std::sort(durations.begin(), durations.end());
  return durations[(durations.size() - 1) / 2].second;
}

CriticalPath FindCriticalPath(const Trace& trace, int64_t graph_id, int64_t iteration,
                              PathEdges edges) {
  const auto graph_it = trace.graphs.find(graph_id);
  RILL_CHECK(graph_it != trace.graphs.end(), kNotFound, trace.path, ": no graph ", graph_id,
             " in rill.graphs (", GraphIds(trace), ")");
  const TraceGraph& graph = graph_it->second;
  const std::map<int64_t, NodeSpan> spans = NodeSpans(trace, graph_id, iteration);
  RILL_CHECK(!spans.empty(), kNotFound, trace.path, ": no kernels of graph ", graph_id,
             " in iteration ", iteration);

  CriticalPath path;
  path.graph = graph_id;
  path.iteration = iteration;
  path.stream_order = edges == PathEdges::kGraphAndStreamOrder;
  double iteration_start = std::numeric_limits<double>::infinity();
  for (const auto& [node, span] : spans) iteration_start = std::min(iteration_start, span.start);
  for (const TraceEvent& e : trace.events) {
    if (IsIteration(e, graph_id) && e.iteration == iteration) {
      iteration_start = e.ts;
      path.iteration_us = e.dur;
      break;
    }
  }

  // Backwards from the last node; `visited` guards against a cyclic graph.
  const PredecessorFinder finder(graph, spans, edges);
  std::vector<std::pair<int64_t, const char*>> chain;  // (node, how its successor reached it)
  std::set<int64_t> visited;
  int64_t node = finder.Last();
  const char* via = "";
  while (node != kNone && visited.insert(node).second) {
    chain.push_back({node, via});
    std::tie(node, via) = finder.Before(node);
  }
  std::reverse(chain.begin(), chain.end());

  for (size_t i = 0; i < chain.size(); ++i) {
    const NodeSpan& span = spans.at(chain[i].first);
    CriticalPathStep step;
    step.node = chain[i].first;
    step.type = span.first->type.empty() ? span.first->name : span.first->type;
    step.place = span.first->place;
    step.stream = span.first->stream;
    if (const auto n = graph.nodes.find(step.node); n != graph.nodes.end()) {
      step.type = n->second.type;
      step.place = n->second.place;
      step.stream = n->second.stream;
    }
    step.start_us = span.start - iteration_start;
    step.dur_us = span.end - span.start;
    if (i > 0) {
      step.wait_us = span.start - spans.at(chain[i - 1].first).end;
      step.via = chain[i - 1].second;
    }
    path.kernels_us += step.dur_us;
    path.waits_us += step.wait_us;
    path.steps.push_back(step);
  }
  path.length_us = spans.at(chain.back().first).end - spans.at(chain.front().first).start;
  return path;
}

}  // namespace rill::trace
