// rill._core's tools: what the rill command offers besides running programs,
// over the same C++ code — the process's trace recorder and the readers of
// trace files (`rill trace summarize`, `rill trace view`: tools/rill's
// rill_trace_tools). Calls that wait or read files release the GIL.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "python/bindings/bindings.h"
#include "tools/rill/trace_summary.h"
#include "tools/rill/trace_view.h"

namespace rill::python {
namespace {

using ReleaseGil = py::call_guard<py::gil_scoped_release>;

void BindTraceRecorder(py::module_& module) {
  py::class_<TraceRecorder, std::shared_ptr<TraceRecorder>>(
      module, "TraceRecorder",
      "What the actor executors did (rill/trace_recorder.h); rill.trace switches it on.")
      .def_static("for_process", &TraceRecorder::ForProcess,
                  "The recorder every rill.ParallelExecutor records into (RILL_TRACE's when set, "
                  "else one that starts off).")
      .def_static("now", &TraceRecorder::Now, "The recorder's clock, in nanoseconds.")
      .def("start", &TraceRecorder::Start, "Executors record the iterations they begin from now.")
      .def("stop", &TraceRecorder::Stop, "Iterations begun from now are not recorded.")
      .def_property_readonly("on", &TraceRecorder::on)
      .def("dropped", &TraceRecorder::dropped, "Events left out because the recorder was full.")
      .def("write_file", &TraceRecorder::WriteFile, py::arg("path"), py::arg("since_ns") = 0,
           ReleaseGil(),
           "Writes a trace file; since_ns > 0: only what began since (a now() value), with "
           "the graphs and lanes of those events alone.");
}

void BindTraceFiles(py::module_& module) {
  module.def(
      "summarize_trace",
      [](const std::string& path, int64_t graph, int64_t iteration, int top) {
        trace::SummaryOptions options;
        options.path_requested = graph >= 0 || iteration >= 0;
        options.graph = graph >= 0 ? graph : 0;
        options.iteration = iteration >= 0 ? iteration : trace::kNone;
        options.top = top;
        return trace::SummaryToJson(trace::Summarize(trace::LoadTrace(path), options), top).dump();
      },
      py::arg("path"), py::arg("graph") = -1, py::arg("iteration") = -1, py::arg("top") = 10,
      ReleaseGil(), "`rill trace summarize --json PATH` as JSON text.");
  module.def("write_trace_view", &trace::WriteTraceView, py::arg("trace_path"),
             py::arg("template_path"), py::arg("out_path"), ReleaseGil(),
             "`rill trace view`: the visualizer page at template_path with the trace embedded.");
  // Where the visualizer page is: in the build tree, and relative to the
  // installed package (cmake --install puts it under <prefix>/share).
  module.attr("visualizer_page_built") = RILL_VISUALIZER_HTML;
  module.attr("visualizer_page_installed") = RILL_VISUALIZER_INSTALLED;
}

}  // namespace

void BindTools(py::module_& module) {
  BindTraceRecorder(module);
  BindTraceFiles(module);
}

}  // namespace rill::python
