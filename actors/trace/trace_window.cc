#include "actors/trace/trace_window.h"

#include <cstddef>
#include <string>
#include <unordered_set>

#include "rill/error.h"

namespace rill {
namespace {

// Old id -> new id; absent ids map to `none`.
class IdMap {
 public:
  IdMap(size_t size, int none) : ids_(size, none), none_(none) {}
  void Keep(int old_id, int base, int new_id) {
    if (const int i = Index(old_id, base); i >= 0) ids_[static_cast<size_t>(i)] = new_id;
  }
  int operator()(int old_id, int base) const {
    const int i = Index(old_id, base);
    return i >= 0 ? ids_[static_cast<size_t>(i)] : none_;
  }
  bool kept(int old_id, int base) const { return (*this)(old_id, base) != none_; }

 private:
  int Index(int old_id, int base) const {
    const int i = old_id - base;
    return i >= 0 && i < static_cast<int>(ids_.size()) ? i : -1;
  }
  std::vector<int> ids_;
  int none_;
};

// The lanes of a top-level graph after the first are named "graph G: ..."
// (GraphTracer); G becomes the graph's new id, and the first's has no prefix.
void RenameGraph(std::string* name, int old_graph, int new_graph) {
  const std::string old_prefix = old_graph > 0 ? StrCat("graph ", old_graph, ": ") : "";
  if (name->compare(0, old_prefix.size(), old_prefix) != 0) return;
  *name = (new_graph > 0 ? StrCat("graph ", new_graph, ": ") : std::string()) +
          name->substr(old_prefix.size());
}

}  // namespace

TraceTables TraceWindow(const TraceTables& all, int64_t since_ns) {
  const int lane_count = static_cast<int>(all.lanes.size());
  auto lane_graph = [&](int lane) {
    return lane >= 1 && lane <= lane_count ? all.lanes[static_cast<size_t>(lane - 1)].graph : -1;
  };
  // A receive is in the window with its message: one handled late, after
  // the window began, of a message sent before it belongs to the last window.
  std::unordered_set<uint32_t> messages;
  for (const TraceEvent& e : all.events) {
    if (e.kind == TraceEventKind::kMessage && e.begin_ns >= since_ns) messages.insert(e.id);
  }
  auto in_window = [&](const TraceEvent& e) {
    return e.begin_ns >= since_ns && (e.kind != TraceEventKind::kReceive || messages.count(e.id));
  };
  // Which graphs, and which lanes of no graph, the window's events fall in:
  // by their lanes (an event's own graph field may be left at 0).
  std::vector<bool> graph_used(all.graphs.size(), false);
  std::vector<bool> lane_used(all.lanes.size(), false);
  auto use_lane = [&](int lane) {
    if (lane < 1 || lane > lane_count) return;
    lane_used[static_cast<size_t>(lane - 1)] = true;
    const int graph = lane_graph(lane);
    if (graph >= 0 && graph < static_cast<int>(graph_used.size())) {
      graph_used[static_cast<size_t>(graph)] = true;
    }
  };
  for (const TraceEvent& e : all.events) {
    if (!in_window(e)) continue;
    use_lane(e.lane);
    if (e.kind == TraceEventKind::kMessage) use_lane(e.peer);
  }

  TraceTables window;
  IdMap graphs(all.graphs.size(), -1);
  for (size_t g = 0; g < all.graphs.size(); ++g) {
    if (!graph_used[g]) continue;
    graphs.Keep(static_cast<int>(g), 0, static_cast<int>(window.graphs.size()));
    window.graphs.push_back(all.graphs[g]);
  }
  IdMap lanes(all.lanes.size(), -1);  // -1: no lane, as in a graph without a parent
  for (int lane = 1; lane <= lane_count; ++lane) {
    const int graph = lane_graph(lane);
    if (graph >= 0 ? !graphs.kept(graph, 0) : !lane_used[static_cast<size_t>(lane - 1)]) continue;
    TraceLane copy = all.lanes[static_cast<size_t>(lane - 1)];
    if (graph >= 0 && all.graphs[static_cast<size_t>(graph)].parent_lane < 0) {
      RenameGraph(&copy.name, graph, graphs(graph, 0));
    }
    copy.graph = graphs(copy.graph, 0);
    window.lanes.push_back(std::move(copy));
    lanes.Keep(lane, 1, static_cast<int>(window.lanes.size()));
  }
  for (TraceGraph& graph : window.graphs) {
    graph.parent_lane = lanes(graph.parent_lane, 1);
    graph.driver_lane = lanes(graph.driver_lane, 1);
    for (TraceGraph::Node& node : graph.nodes) {
      node.lane = lanes(node.lane, 1);
      for (int& chunk : node.chunk_lanes) chunk = lanes(chunk, 1);
    }
  }
  for (const TraceEvent& e : all.events) {
    if (!in_window(e) || !lanes.kept(e.lane, 1)) continue;
    TraceEvent copy = e;
    copy.lane = lanes(e.lane, 1);
    if (e.kind == TraceEventKind::kMessage) copy.peer = lanes(e.peer, 1);
    // Some events (a stream's wake) leave graph at 0: their lane's then.
    int graph = graphs(e.graph, 0);
    if (graph < 0) graph = graphs(lane_graph(e.lane), 0);
    copy.graph = static_cast<uint16_t>(graph >= 0 ? graph : 0);
    window.events.push_back(copy);
  }
  return window;
}

}  // namespace rill
