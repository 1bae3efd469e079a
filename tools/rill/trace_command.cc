// rill trace: reads trace files written by `rill train --trace` (format:
// actors/trace/trace_format.md): summarize one, merge several, or view one in the
// browser.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
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

struct SummarizeFlags {
  std::string file;
  bool json = false;
  int64_t graph = trace::kNone;
  int64_t iteration = trace::kNone;
  int top = 10;
  bool edges_only = false;
};

int Summarize(const SummarizeFlags& flags) {
  trace::SummaryOptions options;
  options.path_requested = flags.graph != trace::kNone || flags.iteration != trace::kNone;
  options.graph = flags.graph == trace::kNone ? 0 : flags.graph;
  options.iteration = flags.iteration;
  options.top = flags.top;
  options.path_edges =
      flags.edges_only ? trace::PathEdges::kGraph : trace::PathEdges::kGraphAndStreamOrder;
  const trace::Summary summary = trace::Summarize(trace::LoadTrace(flags.file), options);
  if (flags.json) {
    std::cout << trace::SummaryToJson(summary, flags.top).dump(2) << "\n";
  } else {
    trace::WriteSummaryText(summary, flags.top, std::cout);
  }
  return kExitOk;
}

struct MergeFlags {
  std::string out;
  std::vector<std::string> inputs;
};

int Merge(const MergeFlags& flags) {
  trace::MergeTraceFiles(flags.out, flags.inputs);
  std::cout << flags.out << "\n";
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

struct ViewFlags {
  std::string file;
  std::string out;
  std::string template_path;
};

int View(ViewFlags flags) {
  if (flags.out.empty()) {
    flags.out = std::filesystem::path(flags.file).replace_extension(".html").string();
  }
  if (flags.out == flags.file) throw UsageError("--out must differ from FILE");
  if (flags.template_path.empty()) flags.template_path = DefaultTemplate();
  trace::WriteTraceView(flags.file, flags.template_path, flags.out);
  std::cout << flags.out << "\n";
  return kExitOk;
}

}  // namespace

Command AddTraceCommand(CLI::App& rill) {
  CLI::App* app = rill.add_subcommand("trace", "read trace files: summarize, merge, view")
                      ->require_subcommand(1);
  app->footer("Trace files come from rill train --trace, rill run --trace or RILL_TRACE=FILE.");

  auto summarize = std::make_shared<SummarizeFlags>();
  CLI::App* summarize_app =
      app->add_subcommand("summarize", "busy lanes, messages, waits, top ops, critical path");
  summarize_app->add_option("FILE", summarize->file, "a trace file")->required();
  summarize_app->add_flag("--json", summarize->json,
                          "one JSON object (keys: tools/rill/trace_summary.h)");
  summarize_app->add_option("--graph", summarize->graph, "the graph of rill.graphs")
      ->type_name("G")
      ->check(AtLeast(0))
      ->default_str("0");
  summarize_app->add_option("--iteration", summarize->iteration, "the iteration")
      ->type_name("N")
      ->check(AtLeast(0))
      ->default_str("the one of median duration");
  summarize_app
      ->add_option("--top", summarize->top, "lanes and op types to list (--json lists every lane)")
      ->type_name("K")
      ->check(AtLeast(1));
  summarize_app->add_flag("--graph-edges-only", summarize->edges_only,
                          "the critical path follows the graph's edges only (the data\n"
                          "dependencies, without the streams' order)");
  summarize_app->footer(
      "Per lane (actor): busy time (its kernels, merged) and utilisation over the\n"
      "trace's span; per stream: kernel time. Messages by kind (count, bytes),\n"
      "waits by place and kind, the top ops by kernel time, and the critical path\n"
      "of one iteration of a graph: from the op that ended last, back to whatever\n"
      "held it back last — the predecessor along the graph's edges that ended\n"
      "last, or the op before it on its stream when that one ended later (a\n"
      "stream runs one op at a time, so it can hold back a ready op) — with each\n"
      "op's wait.");

  auto merge = std::make_shared<MergeFlags>();
  CLI::App* merge_app =
      app->add_subcommand("merge", "merge trace files of several processes, clocks aligned");
  merge_app->add_option("OUT", merge->out, "the merged trace")->required();
  merge_app->add_option("IN", merge->inputs, "the traces to merge")->required()->default_str("");
  merge_app->footer(
      "Writes one trace holding the inputs' events on one time axis (each file's\n"
      "rill.clock), with pids, tids, graph ids and flow ids shifted apart and\n"
      "process names prefixed with the input's rill.node.");

  auto view = std::make_shared<ViewFlags>();
  CLI::App* view_app =
      app->add_subcommand("view", "the trace as a self-contained HTML page (the visualizer)");
  view_app->add_option("FILE", view->file, "a trace file")->required();
  view_app->add_option("--out", view->out, "the page")
      ->type_name("HTML")
      ->default_str("FILE with the extension .html");
  view_app
      ->add_option("--template", view->template_path,
                   "the built visualizer page (default: $RILL_VISUALIZER_HTML, else\n"
                   "the build's tools/visualizer/index.html, made by\n"
                   "`cmake --build build --target visualizer`)")
      ->type_name("PATH");
  view_app->footer("Writes the visualizer page with the trace embedded and prints its path.");

  return {app, [=] {
            if (summarize_app->parsed()) return Summarize(*summarize);
            if (merge_app->parsed()) return Merge(*merge);
            return View(*view);
          }};
}

}  // namespace rill::cli
