// rill._core's tools: what the rill command offers besides running programs,
// over the same C++ code — the process's trace recorder and the readers of
// trace files (`rill trace summarize`, `rill trace view`: tools/rill's
// rill_trace_tools), plugins of custom ops (`rill --plugin`), and the
// Fashion-MNIST reader with the input pipeline (`rill train --input
// pipeline`: tools/datasets). Calls that wait or read files release the GIL.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "python/bindings/bindings.h"
#include "tools/datasets/fashion_mnist.h"
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
      .def_property_readonly("on", &TraceRecorder::on, "Whether executors record now.")
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

void BindPlugins(py::module_& module) {
  module.def("load_plugin", &LoadPlugin, py::arg("path"), ReleaseGil(),
             "Loads a plugin library of ops (rill/plugin.h); returns the op types it "
             "registered.");
}

// The next batch of place 0, or None at the end of the epoch.
py::object NextBatch(InputPipeline& pipeline) {
  PipelineBatch batch;
  bool more;
  {
    py::gil_scoped_release released;
    more = pipeline.Next(0, &batch);
  }
  if (!more) return py::none();
  py::list fields;
  for (const Tensor& field : batch.fields) fields.append(ArrayFromTensor(field));
  return fields;
}

void BindDatasets(py::module_& module) {
  py::class_<BatchSource, std::shared_ptr<BatchSource>>(
      module, "BatchSource", "Where examples come from (rill/input_pipeline.h).")
      .def("size", &BatchSource::size, "Examples per epoch.")
      .def("fields", &BatchSource::fields, "What a batch holds, in order.");
  module.def(
      "fashion_mnist_source",
      [](const std::string& dir, bool train) { return FashionMnistSource(dir, train); },
      py::arg("dir"), py::arg("train"), ReleaseGil(),
      "The IDX files of Fashion-MNIST in dir (tools/datasets/fashion_mnist.h): fields image "
      "(float32 [n, 784] in [0, 1]) and label (int64 [n, 1]).");
  module.attr("fashion_mnist_dir") = kFashionMnistDir;
  py::class_<InputPipeline, std::shared_ptr<InputPipeline>>(
      module, "InputPipeline",
      "Batches of a source, shuffled per epoch and decoded on threads of its own, in the order "
      "`rill train --input pipeline` reads them (rill/input_pipeline.h); one place.")
      .def(py::init([](std::shared_ptr<BatchSource> source, int64_t batch, uint64_t seed,
                       bool shuffle, int decode_threads) {
             InputPipeline::Options options;
             options.batch = batch;
             options.seed = seed;
             options.shuffle = shuffle;
             options.decode_threads = decode_threads;
             return std::make_shared<InputPipeline>(std::move(source), options);
           }),
           py::arg("source"), py::arg("batch"), py::arg("seed") = 0, py::arg("shuffle") = true,
           py::arg("decode_threads") = 1,
           "Batches of `batch` examples of `source` (the last holds what is left).")
      .def("steps_per_epoch", &InputPipeline::steps_per_epoch, "Batches per epoch.")
      .def("start_epoch", &InputPipeline::StartEpoch, py::arg("epoch"), ReleaseGil(),
           "Starts epoch `epoch` (its order: mt19937_64(seed * 1000003 + epoch)).")
      .def("next", &NextBatch,
           "The next batch as a list of ndarrays (one per field), or None after the last.")
      .def("stop", &InputPipeline::Stop, ReleaseGil(), "Ends the epoch; joins its threads.");
}

}  // namespace

void BindTools(py::module_& module) {
  BindTraceRecorder(module);
  BindTraceFiles(module);
  BindPlugins(module);
  BindDatasets(module);
}

}  // namespace rill::python
