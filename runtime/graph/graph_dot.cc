#include "runtime/graph/graph_dot.h"

#include <string>
#include <vector>

namespace rill {
namespace {

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

void WriteOp(const OpNode& op, std::ostream& out) {
  out << "    op" << op.id << " [shape=box, label=\"" << Escape(op.type);
  if (op.op_index >= 0) out << " #" << op.op_index;
  out << "\\nstream " << op.stream << "\"";
  if (op.kind == OpNodeKind::kFeed) out << ", style=filled, fillcolor=lightblue";
  out << "];\n";
}

void WriteVar(const VarNode& var, std::ostream& out) {
  out << "    var" << var.id;
  if (var.control) {
    out << " [shape=point, width=0.08];\n";
    return;
  }
  out << " [shape=ellipse, label=\"" << Escape(var.name) << " v" << var.version << "\"";
  if (var.persistable) out << ", style=filled, fillcolor=lightyellow";
  out << "];\n";
}

}  // namespace

void WriteDot(const SsaGraph& graph, std::ostream& out) {
  out << "digraph ssa {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  for (size_t p = 0; p < graph.places.size(); ++p) {
    out << "  subgraph cluster_place_" << p << " {\n    label=\"place " << p << ": "
        << graph.places[p].ToString() << "\";\n";
    for (const OpNode& op : graph.ops) {
      if (op.place == static_cast<int>(p)) WriteOp(op, out);
    }
    for (const VarNode& var : graph.vars) {
      if (var.place == static_cast<int>(p)) WriteVar(var, out);
    }
    out << "  }\n";
  }
  // Collectives and the variables all places share sit outside the clusters.
  for (const OpNode& op : graph.ops) {
    if (op.place < 0) {
      out << "  op" << op.id << " [shape=hexagon, style=filled, fillcolor=orange, label=\""
          << Escape(op.type) << " #" << op.collective << "\"];\n";
    }
  }
  for (const VarNode& var : graph.vars) {
    if (var.place < 0) WriteVar(var, out);
  }
  for (const VarNode& var : graph.vars) {
    const char* style = var.control ? " [style=dashed]" : "";
    if (var.producer >= 0) out << "  op" << var.producer << " -> var" << var.id << style << ";\n";
    for (int consumer : var.consumers) {
      out << "  var" << var.id << " -> op" << consumer << style << ";\n";
    }
  }
  out << "}\n";
}

void WriteStats(const SsaGraph& graph, std::ostream& out) {
  int feeds = 0;
  for (const OpNode& op : graph.ops) feeds += op.kind == OpNodeKind::kFeed ? 1 : 0;
  out << "places          " << graph.places.size() << "\n"
      << "streams/place   " << graph.streams_per_place << "\n"
      << "op nodes        " << graph.ops.size() << " (" << feeds << " feed)\n"
      << "var nodes       " << graph.vars.size() << " (" << graph.ControlEdgeCount()
      << " control)\n"
      << "op->op edges    " << graph.EdgeCount() << "\n"
      << "sources         " << graph.Sources().size() << "\n"
      << "sinks           " << graph.Sinks().size() << "\n";
  int collectives = 0;
  std::vector<std::vector<int>> per_stream(graph.places.size(),
                                           std::vector<int>(graph.streams_per_place, 0));
  for (const OpNode& op : graph.ops) {
    if (op.place < 0) {
      ++collectives;
    } else {
      ++per_stream[op.place][op.stream];
    }
  }
  out << "collectives     " << collectives << "\n";
  for (size_t p = 0; p < per_stream.size(); ++p) {
    out << "place " << p << " (" << graph.places[p].ToString() << ") ops per stream:";
    for (int n : per_stream[p]) out << " " << n;
    out << "\n";
  }
}

}  // namespace rill
