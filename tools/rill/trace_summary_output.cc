// Writes a Summary as text tables or as one JSON object.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "tools/rill/trace_summary.h"

namespace rill::trace {
namespace {

using nlohmann::json;

template <class... Args>
std::string Format(const char* format, Args... args) {
  const int size = std::snprintf(nullptr, 0, format, args...);
  std::string out(static_cast<size_t>(std::max(size, 0)) + 1, '\0');
  std::snprintf(out.data(), out.size(), format, args...);
  out.pop_back();
  return out;
}

std::string Bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? Format("%lld B", static_cast<long long>(bytes))
                   : Format("%.1f %s", value, units[unit]);
}

std::string Percent(double ratio) { return Format("%.1f%%", 100 * ratio); }

std::string ProcessName(const Summary& summary, int64_t pid) {
  const auto it = summary.process_names.find(pid);
  return it != summary.process_names.end() ? it->second : "pid " + std::to_string(pid);
}

// "node: " for the input of a merged file; "" otherwise.
std::string InputPrefix(const Summary& summary, int64_t input) {
  if (input < 0 || input >= static_cast<int64_t>(summary.inputs.size())) return "";
  return summary.inputs[input] + ": ";
}

std::string OrDash(int64_t value) { return value == kNone ? "-" : std::to_string(value); }

// Round times to the nanosecond and ratios to 1e-4, so the JSON stays short.
double Us(double value) { return std::round(value * 1000) / 1000; }
double Share(double value) { return std::round(value * 10000) / 10000; }

double BytesRatio(const GradientBytes& g) {
  return g.raw_bytes > 0 ? static_cast<double>(g.bytes) / static_cast<double>(g.raw_bytes) : 0;
}

void WriteLanes(const Summary& s, int top, std::ostream& out) {
  out << Format("\nlanes by busy time (%d of %zu)\n", std::min<int>(top, s.lanes.size()),
                s.lanes.size());
  out << "   busy ms    util  events  lane\n";
  for (size_t i = 0; i < s.lanes.size() && static_cast<int>(i) < top; ++i) {
    const LaneUsage& l = s.lanes[i];
    out << Format("%10.3f  %6s  %6lld  %s @ %s\n", l.busy_us / 1000, Percent(l.utilisation).c_str(),
                  static_cast<long long>(l.events), l.name.c_str(), ProcessName(s, l.pid).c_str());
  }
  if (s.streams.empty()) return;
  out << "\nstreams by kernel time\n";
  out << " kernel ms    util  kernels  stream\n";
  for (const StreamUsage& st : s.streams) {
    out << Format("%10.3f  %6s  %7lld  %sstream %s.%lld\n", st.kernel_us / 1000,
                  Percent(st.utilisation).c_str(), static_cast<long long>(st.kernels),
                  InputPrefix(s, st.pid / kMergedPidStride).c_str(), OrDash(st.place).c_str(),
                  static_cast<long long>(st.stream));
  }
}

void WriteMessagesAndWaits(const Summary& s, std::ostream& out) {
  if (!s.messages.empty()) {
    out << "\nmessages\n  kind              count         bytes\n";
    for (const MessageStats& m : s.messages) {
      out << Format("  %-12s %10lld  %12s\n", m.kind.c_str(), static_cast<long long>(m.count),
                    Bytes(m.bytes).c_str());
    }
  }
  if (!s.gradient_bytes.empty()) {
    out << "\ngradient bytes   count       float32     as merged/sent   ratio\n";
    for (const GradientBytes& g : s.gradient_bytes) {
      out << Format("  %-10s %9lld  %12s  %15s  %6.3f\n", g.kind.c_str(),
                    static_cast<long long>(g.count), Bytes(g.raw_bytes).c_str(),
                    Bytes(g.bytes).c_str(), BytesRatio(g));
    }
  }
  if (!s.waits.empty()) {
    out << "\nwaits\n  where        kind               count   total ms    mean µs\n";
    for (const WaitStats& w : s.waits) {
      const std::string where = InputPrefix(s, w.input) + "place " + OrDash(w.place);
      out << Format("  %-12s %-16s %7lld %10.3f %10.3f\n", where.c_str(), w.name.c_str(),
                    static_cast<long long>(w.count), w.total_us / 1000,
                    w.total_us / static_cast<double>(w.count));
    }
  }
}

void WriteOps(const Summary& s, int top, std::ostream& out) {
  if (s.ops.empty()) return;
  out << Format("\nops by kernel time (%d of %zu types)\n", std::min<int>(top, s.ops.size()),
                s.ops.size());
  out << "  type                     count   total ms    mean µs   share\n";
  for (size_t i = 0; i < s.ops.size() && static_cast<int>(i) < top; ++i) {
    const OpStats& op = s.ops[i];
    out << Format("  %-22s %7lld %10.3f %10.3f  %6s\n", op.type.c_str(),
                  static_cast<long long>(op.count), op.total_us / 1000,
                  op.total_us / static_cast<double>(op.count), Percent(op.share).c_str());
  }
}

void WriteTimeSplit(const Summary& s, std::ostream& out) {
  if (!s.time_split) return;
  const ParallelSplit& t = *s.time_split;
  out << Format(
      "\ntime split of graph %lld: %lld iterations on %lld places, and the gaps between them\n",
      static_cast<long long>(t.graph), static_cast<long long>(t.iterations),
      static_cast<long long>(t.places));
  const std::pair<const char*, double> rows[] = {
      {"all places compute", t.all_places_us},    {"some places compute", t.some_places_us},
      {"no place computes", t.no_place_us},       {"before the first kernel", t.before_first_us},
      {"after the last kernel", t.after_last_us}, {"between iterations", t.between_us}};
  for (const auto& [name, us] : rows) {
    out << Format("  %-24s %10.3f ms  %6s\n", name, us / 1000, Percent(us / t.total_us).c_str());
  }
  out << Format(
      "serial fraction %s (all but \"all places compute\"); of %.3f ms of place kernels, "
      "merge chunks %.3f ms; places waited %.3f ms at merge barriers\n",
      Percent(t.serial_fraction()).c_str(), t.kernel_us / 1000, t.merge_us / 1000,
      t.barrier_us / 1000);
}

void WriteCriticalPath(const Summary& s, std::ostream& out) {
  if (s.iterations) {
    const IterationStats& it = *s.iterations;
    out << Format(
        "\niterations of graph %lld: %lld, median %.3f ms, mean %.3f ms, "
        "min %.3f ms, max %.3f ms\n",
        static_cast<long long>(it.graph), static_cast<long long>(it.count), it.median_us / 1000,
        it.mean_us / 1000, it.min_us / 1000, it.max_us / 1000);
  }
  if (!s.critical_path) {
    out << "\ncritical path: none (" << s.critical_path_note << ")\n";
    return;
  }
  const CriticalPath& p = *s.critical_path;
  out << Format("\ncritical path of graph %lld, iteration %lld (%s)\n",
                static_cast<long long>(p.graph), static_cast<long long>(p.iteration),
                p.stream_order ? "graph edges and stream order" : "graph edges");
  out << "    node  type                          place.stream   start µs     dur µs    wait µs"
         "  via\n";
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const CriticalPathStep& step = p.steps[i];
    const std::string where = OrDash(step.place) + "." + OrDash(step.stream);
    const std::string wait = i == 0 ? "-" : Format("%.3f", step.wait_us);
    out << Format("  %6lld  %-29s %-12s %10.3f %10.3f %10s  %s\n",
                  static_cast<long long>(step.node), step.type.c_str(), where.c_str(),
                  step.start_us, step.dur_us, wait.c_str(), step.via.c_str());
  }
  out << Format("critical path: %.3f ms over %zu ops", p.length_us / 1000, p.steps.size());
  if (p.iteration_us >= 0) {
    out << Format(" (%s of the iteration's %.3f ms)", Percent(p.length_us / p.iteration_us).c_str(),
                  p.iteration_us / 1000);
  }
  out << Format("; kernels %.3f ms, waits %.3f ms\n", p.kernels_us / 1000, p.waits_us / 1000);
  if (p.iteration_us >= 0 && !p.steps.empty()) {
    // What the path does not cover: starting the iteration (binding feeds, waking
    // streams) before its first op, finishing it (merging fetches) after its last.
    const CriticalPathStep& last = p.steps.back();
    out << Format("outside the path: %.3f ms before its first op, %.3f ms after its last\n",
                  p.steps.front().start_us / 1000,
                  (p.iteration_us - last.start_us - last.dur_us) / 1000);
  }
}

json CriticalPathToJson(const CriticalPath& p) {
  json nodes = json::array();
  for (const CriticalPathStep& step : p.steps) {
    nodes.push_back({{"node", step.node},
                     {"type", step.type},
                     {"place", step.place},
                     {"stream", step.stream},
                     {"start_us", Us(step.start_us)},
                     {"dur_us", Us(step.dur_us)},
                     {"wait_us", Us(step.wait_us)},
                     {"via", step.via}});
  }
  return {{"graph", p.graph},
          {"iteration", p.iteration},
          {"stream_order", p.stream_order},
          {"length_us", Us(p.length_us)},
          {"iteration_us", p.iteration_us >= 0 ? json(Us(p.iteration_us)) : json(nullptr)},
          {"kernels_us", Us(p.kernels_us)},
          {"waits_us", Us(p.waits_us)},
          {"nodes", std::move(nodes)}};
}

}  // namespace

void WriteSummaryText(const Summary& s, int top, std::ostream& out) {
  out << Format("trace %s: %lld events over %.3f ms, %lld dropped\n", s.path.c_str(),
                static_cast<long long>(s.events), s.span_us / 1000,
                static_cast<long long>(s.dropped_events));
  if (!s.inputs.empty()) {
    out << "merged from:";
    for (const std::string& input : s.inputs) out << " " << input;
    out << "\n";
  }
  WriteLanes(s, top, out);
  WriteMessagesAndWaits(s, out);
  WriteOps(s, top, out);
  WriteCriticalPath(s, out);
  WriteTimeSplit(s, out);
}

json SummaryToJson(const Summary& s, int top) {
  json out = {{"file", s.path},
              {"events", s.events},
              {"dropped_events", s.dropped_events},
              {"inputs", s.inputs},
              {"start_us", Us(s.start_us)},
              {"end_us", Us(s.end_us)},
              {"span_us", Us(s.span_us)},
              {"kernel_us", Us(s.kernel_us)}};
  json& lanes = out["lanes"] = json::array();
  for (const LaneUsage& l : s.lanes) {
    lanes.push_back({{"pid", l.pid},
                     {"tid", l.tid},
                     {"name", l.name},
                     {"kind", l.kind},
                     {"process", ProcessName(s, l.pid)},
                     {"events", l.events},
                     {"busy_us", Us(l.busy_us)},
                     {"utilisation", Share(l.utilisation)}});
  }
  json& streams = out["streams"] = json::array();
  for (const StreamUsage& st : s.streams) {
    streams.push_back({{"pid", st.pid},
                       {"place", st.place},
                       {"stream", st.stream},
                       {"name", "stream " + OrDash(st.place) + "." + std::to_string(st.stream)},
                       {"process", ProcessName(s, st.pid)},
                       {"kernels", st.kernels},
                       {"kernel_us", Us(st.kernel_us)},
                       {"utilisation", Share(st.utilisation)}});
  }
  json& messages = out["messages"] = json::array();
  for (const MessageStats& m : s.messages) {
    messages.push_back({{"kind", m.kind}, {"count", m.count}, {"bytes", m.bytes}});
  }
  json& gradient_bytes = out["gradient_bytes"] = json::array();
  for (const GradientBytes& g : s.gradient_bytes) {
    gradient_bytes.push_back({{"kind", g.kind},
                              {"count", g.count},
                              {"raw_bytes", g.raw_bytes},
                              {"bytes", g.bytes},
                              {"ratio", Share(BytesRatio(g))}});
  }
  json& waits = out["waits"] = json::array();
  for (const WaitStats& w : s.waits) {
    waits.push_back({{"input", w.input},
                     {"place", w.place},
                     {"name", w.name},
                     {"count", w.count},
                     {"total_us", Us(w.total_us)},
                     {"mean_us", Us(w.total_us / static_cast<double>(w.count))}});
  }
  json& ops = out["ops"] = json::array();
  for (size_t i = 0; i < s.ops.size() && static_cast<int>(i) < top; ++i) {
    const OpStats& op = s.ops[i];
    ops.push_back({{"type", op.type},
                   {"count", op.count},
                   {"total_us", Us(op.total_us)},
                   {"mean_us", Us(op.total_us / static_cast<double>(op.count))},
                   {"share", Share(op.share)}});
  }
  out["op_types"] = s.ops.size();
  out["iterations"] = nullptr;
  if (s.iterations) {
    const IterationStats& it = *s.iterations;
    out["iterations"] = {
        {"graph", it.graph},         {"count", it.count},       {"median_us", Us(it.median_us)},
        {"mean_us", Us(it.mean_us)}, {"min_us", Us(it.min_us)}, {"max_us", Us(it.max_us)}};
  }
  out["time_split"] = nullptr;
  if (s.time_split) {
    const ParallelSplit& t = *s.time_split;
    out["time_split"] = {{"graph", t.graph},
                         {"iterations", t.iterations},
                         {"places", t.places},
                         {"total_us", Us(t.total_us)},
                         {"between_us", Us(t.between_us)},
                         {"before_first_us", Us(t.before_first_us)},
                         {"after_last_us", Us(t.after_last_us)},
                         {"all_places_us", Us(t.all_places_us)},
                         {"some_places_us", Us(t.some_places_us)},
                         {"no_place_us", Us(t.no_place_us)},
                         {"kernel_us", Us(t.kernel_us)},
                         {"merge_us", Us(t.merge_us)},
                         {"barrier_us", Us(t.barrier_us)},
                         {"serial_fraction", Share(t.serial_fraction())}};
  }
  out["critical_path"] = nullptr;
  if (s.critical_path) {
    out["critical_path"] = CriticalPathToJson(*s.critical_path);
  } else {
    out["critical_path_note"] = s.critical_path_note;
  }
  return out;
}

}  // namespace rill::trace
