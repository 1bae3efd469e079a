// rill._core's tools: what the rill command offers besides running programs,
// over the same C++ code — the process's trace recorder and the readers of
// trace files (`rill trace summarize`, `rill trace view`: tools/rill's
// rill_trace_tools), plugins of custom ops (`rill --plugin`), and the
// Fashion-MNIST reader with the input pipeline (`rill train --input
// pipeline`: tools/datasets). Calls that wait or read files release the GIL.
#include <pybind11/stl.h>

#include <algorithm>
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

// Calls `fn` (with the GIL) on `given` and copies what it returns into the
// kernel's outputs `slots`: an ndarray for one slot, else {key: ndarray} with
// keys[i] (default: the slot's name) for slots[i]; `shapes` (optional, one
// per slot) are what each must be. What it raises fails the op, naming it
// and `what` ("kernel", "gradient").
void CallPythonKernel(KernelContext& ctx, const std::string& type, const char* what,
                      const py::object& fn, const py::dict& given,
                      const std::vector<std::string>& slots,
                      const std::vector<std::string>& keys = {},
                      const std::vector<const Tensor*>& shapes = {}) {
  try {
    py::object made = fn(**given);
    auto store = [&](size_t i, const py::handle& value) {
      if (!ctx.HasOutput(slots[i])) return;  // a gradient append_backward pruned
      Tensor out = TensorFromArray(slots[i], py::array::ensure(value));
      if (!shapes.empty()) {
        RILL_CHECK(out.shape() == shapes[i]->shape() && out.dtype() == shapes[i]->dtype(),
                   kInvalidArgument, "the Python ", what, " of op ", type, " returned ",
                   out.Describe(), " for ", slots[i], ", which must be ", shapes[i]->Describe());
      }
      *ctx.Output(slots[i]) = std::move(out);
    };
    if (slots.size() == 1 && !py::isinstance<py::dict>(made)) {
      store(0, made);
      return;
    }
    const py::dict by_slot = made;
    for (size_t i = 0; i < slots.size(); ++i) {
      store(i, by_slot[py::str(keys.empty() ? slots[i] : keys[i])]);
    }
  } catch (const py::error_already_set& error) {
    Fail(ErrorCode::kInvalidArgument, "the Python ", what, " of op ", type,
         " raised: ", error.what());
  } catch (const py::cast_error& error) {
    Fail(ErrorCode::kInvalidArgument, "the Python ", what, " of op ", type,
         " must return an ndarray, or {slot: ndarray}: ", error.what());
  }
}

// "<type>_grad" of a Python op with a gradient function: takes the forward
// inputs and outputs and each output's gradient (`<slot>_grad`; zeros where
// no gradient reached that output), returns each differentiable input's
// gradient, shaped like that input. Registered with the forward op.
OpSchema PythonGradSchema(const std::string& type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs,
                          const std::vector<std::string>& differentiable, const py::object* grad) {
  OpSchema schema(type + "_grad");
  schema.Doc("the gradient of " + type + ", a Python function");
  for (const std::string& slot : inputs) schema.Input(slot, "the forward input");
  for (const std::string& slot : outputs) {
    schema.Input(slot, "the forward output", kOptional);
    schema.Input(GradVarName(slot), "its gradient; absent means zero", kOptional);
  }
  for (const std::string& slot : differentiable) {
    schema.Output(GradVarName(slot), "the gradient of " + slot, kOptional);
  }
  schema.InferShape([=](ShapeContext& ctx) {
    for (const std::string& slot : differentiable) {
      if (ctx.HasOutput(GradVarName(slot))) {
        ctx.SetOutput(GradVarName(slot), ctx.InputShape(slot), ctx.InputType(slot));
      }
    }
  });
  schema.CpuKernel([=](KernelContext& ctx) {
    py::gil_scoped_acquire gil;
    py::dict given;
    for (const std::string& slot : inputs) given[py::str(slot)] = ArrayFromTensor(ctx.Input(slot));
    for (const std::string& slot : outputs) {
      const Tensor& out = ctx.Input(slot);
      const std::string d = GradVarName(slot);
      const bool has = ctx.InputReady(d);
      Tensor zeros;
      if (!has) {
        zeros.Allocate(out.dtype(), out.shape());
        zeros.Fill(0.0);
      }
      given[py::str(slot)] = ArrayFromTensor(out);
      given[py::str(slot + "_grad")] = ArrayFromTensor(has ? ctx.Input(d) : zeros);
    }
    // The function answers by input slot; the kernel's outputs are their @GRAD slots.
    std::vector<std::string> grad_slots;
    std::vector<const Tensor*> shapes;
    for (const std::string& slot : differentiable) {
      grad_slots.push_back(GradVarName(slot));
      shapes.push_back(&ctx.Input(slot));
    }
    CallPythonKernel(ctx, type, "gradient", *grad, given, grad_slots, differentiable, shapes);
  });
  return schema;
}

// An op whose CPU kernel is a Python function: kernel(**{input slot: ndarray})
// returns the output's ndarray, or {output slot: ndarray} for several. Its
// shapes come from infer_shape(**{input slot: (shape, dtype)}) -> {output
// slot: (shape, dtype)}, or, when that is None, every output is shaped like
// the first input. With `grad` (not None) it has a gradient op
// (PythonGradSchema) for every input but those in `no_grad`. Executor threads
// take the GIL to call them (a step runs without it). Inputs are copies,
// outputs are copied in.
void RegisterPythonOp(const std::string& type, const std::vector<std::string>& inputs,
                      const std::vector<std::string>& outputs, const py::function& kernel,
                      const py::object& infer_shape, const std::string& doc, const py::object& grad,
                      const std::vector<std::string>& no_grad) {
  RILL_CHECK(!inputs.empty() && !outputs.empty(), kInvalidArgument, "op ", type,
             ": a Python op needs an input and an output");
  std::vector<std::string> differentiable;
  for (const std::string& slot : no_grad) {
    RILL_CHECK(std::find(inputs.begin(), inputs.end(), slot) != inputs.end(), kInvalidArgument,
               "op ", type, ": no_grad names ", slot, ", which is not an input");
  }
  for (const std::string& slot : inputs) {
    if (std::find(no_grad.begin(), no_grad.end(), slot) == no_grad.end()) {
      differentiable.push_back(slot);
    }
  }
  const bool has_grad = !grad.is_none();
  RILL_CHECK(!has_grad || !differentiable.empty(), kInvalidArgument, "op ", type,
             ": a gradient function, but no_grad leaves no input to differentiate");
  // Never destroyed: the op registry outlives the interpreter.
  const auto* run = new py::object(kernel);
  const auto* shapes = new py::object(infer_shape);
  OpSchema schema(type);
  schema.Doc(doc.empty() ? "an op whose kernel is a Python function" : doc);
  for (const std::string& slot : inputs) {
    const bool flows = has_grad && std::find(differentiable.begin(), differentiable.end(), slot) !=
                                       differentiable.end();
    schema.Input(slot, "input", flows ? 0u : kNoGradient);
  }
  for (const std::string& slot : outputs) {
    schema.Output(slot, "output", has_grad ? 0u : kNoGradient);
  }
  schema.InferShape([=](ShapeContext& ctx) {
    py::gil_scoped_acquire gil;
    if (shapes->is_none()) {
      for (const std::string& slot : outputs) {
        ctx.SetOutput(slot, ctx.InputShape(inputs[0]), ctx.InputType(inputs[0]));
      }
      return;
    }
    py::dict given;
    for (const std::string& slot : inputs) {
      given[py::str(slot)] =
          py::make_tuple(ctx.InputShape(slot), DataTypeName(ctx.InputType(slot)));
    }
    try {
      const py::dict made = (*shapes)(**given);
      for (const std::string& slot : outputs) {
        const py::tuple out = made[py::str(slot)];
        ctx.SetOutput(slot, out[0].cast<Shape>(), ParseDataType(out[1].cast<std::string>()));
      }
    } catch (const py::error_already_set& error) {
      Fail(ErrorCode::kInvalidArgument, "the Python shape function of op ", type,
           " raised: ", error.what());
    } catch (const py::cast_error& error) {
      Fail(ErrorCode::kInvalidArgument, "the Python shape function of op ", type,
           " must return {output slot: (shape, dtype)}: ", error.what());
    }
  });
  schema.CpuKernel([=](KernelContext& ctx) {
    py::gil_scoped_acquire gil;
    py::dict given;
    for (const std::string& slot : inputs) given[py::str(slot)] = ArrayFromTensor(ctx.Input(slot));
    CallPythonKernel(ctx, type, "kernel", *run, given, outputs);
  });
  std::vector<OpSchema> schemas;
  if (has_grad) {
    schema.DefaultGrad();
    schemas.push_back(
        PythonGradSchema(type, inputs, outputs, differentiable, new py::object(grad)));
  }
  schemas.insert(schemas.begin(), std::move(schema));
  RegisterOps(std::move(schemas));
}

void BindPlugins(py::module_& module) {
  module.def("load_plugin", &LoadPlugin, py::arg("path"), ReleaseGil(),
             "Loads a plugin library of ops (rill/plugin.h); returns the op types it "
             "registered.");
  module.def("register_python_op", &RegisterPythonOp, py::arg("type"), py::arg("inputs"),
             py::arg("outputs"), py::arg("kernel"), py::arg("infer_shape"), py::arg("doc"),
             py::arg("grad") = py::none(), py::arg("no_grad") = std::vector<std::string>{},
             "Registers an op whose CPU kernel is a Python function (rill.register_op).");
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
           "Batches of `batch` examples of `source` (the last holds what is left); "
           "decode_threads=0 decodes each batch in next(), on the calling thread.")
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
