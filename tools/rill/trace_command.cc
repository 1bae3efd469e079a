// rill trace: reads trace files written by `rill train --trace` (format:
// actors/trace/trace_format.md): summarize one, merge several, or view one in the
// browser.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "tools/rill/commands.h"
#include "tools/rill/flags.h"
#include "tools/rill/trace_file.h"
#include "tools/rill/trace_merge.h"
#include "tools/rill/trace_summary.h"
#include "tools/rill/trace_view.h"

namespace rill::cli {
namespace {

constexpr const char* kUsage = R"(usage: rill trace summarize|merge|view ...
  summarize FILE [--json] [--graph G] [--iteration N] [--top K] [--graph-edges-only]
                 busy time per lane and stream, messages, waits, top ops,
                 and the critical path of one iteration
  merge OUT IN1 IN2 ...
                 one trace from several processes' traces, clocks aligned
  view FILE [--out HTML] [--template PATH]
                 a self-contained HTML page of the trace (the visualizer)
)";

constexpr const char* kSummarizeUsage =
    R"(usage: rill trace summarize FILE [--json] [--graph G] [--iteration N] [--top K]
                              [--graph-edges-only]
  Per lane (actor): busy time (its kernels, merged) and utilisation over the
  trace's span; per stream: kernel time. Messages by kind (count, bytes),
  waits by place and kind, the top ops by kernel time, and the critical path
  of one iteration of a graph: from the op that ended last, back to whatever
  held it back last — the predecessor along the graph's edges that ended
  last, or the op before it on its stream when that one ended later (a
  stream runs one op at a time, so it can hold back a ready op) — with each
  op's wait.
  --graph G         the graph of rill.graphs (default 0)
  --iteration N     the iteration (default: the one of median duration)
  --top K           lanes and op types to list (default 10; --json lists
                    every lane)
  --graph-edges-only  the critical path follows the graph's edges only (the
                    data dependencies, without the streams' order)
  --json            one JSON object (keys: tools/rill/trace_summary.h)
)";

constexpr const char* kMergeUsage = R"(usage: rill trace merge OUT IN1 IN2 ...
  Writes one trace holding the inputs' events on one time axis (each file's
  rill.clock), with pids, tids, graph ids and flow ids shifted apart and
  process names prefixed with the input's rill.node.
)";

constexpr const char* kViewUsage = R"(usage: rill trace view FILE [--out HTML] [--template PATH]
  Writes the visualizer page with the trace embedded and prints its path.
  --out       the page (default: FILE with the extension .html)
  --template  the built visualizer page (default: $RILL_VISUALIZER_HTML, else
              the build's tools/visualizer/index.html, made by
              `cmake --build build --target visualizer`)
)";

int Summarize(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  bool json = false;
  int64_t graph = trace::kNone;
  int64_t iteration = trace::kNone;
  int top = 10;
  bool edges_only = false;
  Flags flags("rill trace summarize", kSummarizeUsage);
  flags.Positional("FILE", &files, 1, 1);
  flags.Bool("--json", &json);
  flags.Int64("--graph", &graph);
  flags.Int64("--iteration", &iteration);
  flags.Int("--top", &top);
  flags.Bool("--graph-edges-only", &edges_only);
  if (int rc = flags.Parse(args); rc >= 0) return rc;
  if (top < 1) return flags.UsageError("--top must be >= 1");
  if (graph < trace::kNone) return flags.UsageError("--graph must be >= 0");
  if (iteration < trace::kNone) return flags.UsageError("--iteration must be >= 0");
  trace::SummaryOptions options;
  options.path_requested = graph != trace::kNone || iteration != trace::kNone;
  options.graph = graph == trace::kNone ? 0 : graph;
  options.iteration = iteration;
  options.top = top;
  options.path_edges =
      edges_only ? trace::PathEdges::kGraph : trace::PathEdges::kGraphAndStreamOrder;
  const trace::Summary summary = trace::Summarize(trace::LoadTrace(files[0]), options);
  if (json) {
    std::cout << trace::SummaryToJson(summary, top).dump(2) << "\n";
  } else {
    trace::WriteSummaryText(summary, top, std::cout);
  }
  return kExitOk;
}

int Merge(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  Flags flags("rill trace merge", kMergeUsage);
  flags.Positional("OUT IN1 IN2 ...", &files, 2, -1);
  if (int rc = flags.Parse(args); rc >= 0) return rc;
  const std::vector<std::string> inputs(files.begin() + 1, files.end());
  trace::MergeTraceFiles(files[0], inputs);
  std::cout << files[0] << "\n";
  return kExitOk;
}

std::string DefaultTemplate() {
  if (const char* env = std::getenv("RILL_VISUALIZER_HTML"); env != nullptr && *env != '\0') {
    return env;
  }
  // An installed rill: <prefix>/bin/rill finds <prefix>/share/rill/visualizer/index.html.
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share/rill/visualizer/index.html";
    if (std::filesystem::is_regular_file(installed, ec)) return installed.string();
  }
  return RILL_VISUALIZER_HTML;
}

int View(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string out;
  std::string template_path;
  Flags flags("rill trace view", kViewUsage);
  flags.Positional("FILE", &files, 1, 1);
  flags.String("--out", &out);
  flags.String("--template", &template_path);
  if (int rc = flags.Parse(args); rc >= 0) return rc;
  if (out.empty()) out = std::filesystem::path(files[0]).replace_extension(".html").string();
  if (out == files[0]) return flags.UsageError("--out must differ from FILE");
  if (template_path.empty()) template_path = DefaultTemplate();
  trace::WriteTraceView(files[0], template_path, out);
  std::cout << out << "\n";
  return kExitOk;
}

}  // namespace

int TraceCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << kUsage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "summarize") return Summarize(rest);
  if (args[0] == "merge") return Merge(rest);
  if (args[0] == "view") return View(rest);
  std::cerr << "rill trace: unknown subcommand '" << args[0] << "'\n" << kUsage;
  return kExitUsage;
}

}  // namespace rill::cli
