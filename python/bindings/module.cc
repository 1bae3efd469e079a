// rill._core: the Python module's C++ half. It binds the public C++ API
// (rill/rill.h) one call to one call; the Fluid-style names and defaults live
// in the Python package (python/rill/). This file: the module, its error
// classes, programs, the builder, backward and the optimizers.
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "python/bindings/bindings.h"

namespace rill::python {
namespace {

constexpr int kErrorCodes = static_cast<int>(ErrorCode::kCancelled) + 1;

// The Python class of each error code (subclasses of rill.Error), created once
// at import and alive as long as the module (the module holds a reference).
std::array<PyObject*, kErrorCodes> error_classes = {};

struct ErrorClass {
  ErrorCode code;
  const char* name;
};
constexpr ErrorClass kErrorClasses[] = {
    {ErrorCode::kInvalidArgument, "InvalidArgumentError"},
    {ErrorCode::kNotFound, "NotFoundError"},
    {ErrorCode::kOutOfRange, "OutOfRangeError"},
    {ErrorCode::kParse, "ParseError"},
    {ErrorCode::kUnimplemented, "UnimplementedError"},
    {ErrorCode::kInternal, "InternalError"},
    {ErrorCode::kIo, "IoError"},
    {ErrorCode::kTimeout, "TimeoutError"},
    {ErrorCode::kUnavailable, "UnavailableError"},
    {ErrorCode::kCancelled, "CancelledError"},
};

void BindErrors(py::module_& module) {
  static py::exception<Error> base(module, "Error");
  base.doc() =
      "What a failed Rill call raises; a subclass per error code (rill.NotFoundError, ...).";
  for (const ErrorClass& error : kErrorClasses) {
    const std::string qualified = std::string("rill.") + error.name;
    PyObject* type = PyErr_NewException(qualified.c_str(), base.ptr(), nullptr);
    if (type == nullptr) throw py::error_already_set();
    module.add_object(error.name, py::handle(type));  // steals the reference
    py::handle(type).attr("code") = ErrorCodeName(error.code);
    error_classes[static_cast<int>(error.code)] = type;
  }
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& error) {
      const int code = static_cast<int>(error.code());
      PyObject* type = code >= 0 && code < kErrorCodes ? error_classes[code] : base.ptr();
      PyErr_SetString(type, error.what());
    }
  });
}

Activation ParseActivation(const std::string& name) {
  if (name.empty() || name == "none") return Activation::kNone;
  if (name == "relu") return Activation::kRelu;
  if (name == "sigmoid") return Activation::kSigmoid;
  if (name == "tanh") return Activation::kTanh;
  if (name == "softmax") return Activation::kSoftmax;
  if (name == "gelu") return Activation::kGelu;
  Fail(ErrorCode::kInvalidArgument, "unknown activation \"", name,
       "\" (expected relu, sigmoid, tanh, softmax or gelu)");
}

py::list PairsToList(const std::vector<ParamGrad>& pairs) {
  py::list out;
  for (const ParamGrad& pair : pairs) out.append(py::make_tuple(pair.param, pair.grad));
  return out;
}

// An attribute of append_op: what a Python value becomes (bool before int:
// pybind11 tries the alternatives in order, and True is no int here).
using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>>;

// Sets the attributes on an op being appended; an int becomes an int
// attribute when it fits (Fluid's ints are), a float a float one.
void SetAttrs(proto::OpDesc* op, const std::vector<std::pair<std::string, AttrValue>>& attrs) {
  for (const auto& [name, value] : attrs) {
    std::visit(
        [&, &name = name]<class T>(const T& v) {
          if constexpr (std::is_same_v<T, int64_t>) {
            if (v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max()) {
              SetAttr(op, name, static_cast<int>(v));
            } else {
              SetAttr(op, name, v);
            }
          } else if constexpr (std::is_same_v<T, double>) {
            SetAttr(op, name, static_cast<float>(v));
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            SetAttr(op, name, std::vector<float>(v.begin(), v.end()));
          } else {
            SetAttr(op, name, v);
          }
        },
        value);
  }
}

void BindProgram(py::module_& module) {
  py::class_<Program>(module, "Program", "An owned ProgramDesc (rill/program.h).")
      .def(py::init<>())
      .def(
          "to_string", [](const Program& p) { return FormatProgram(p.desc()); },
          "One op per line, as `rill print` lists it.")
      .def(
          "to_text", [](const Program& p) { return ProgramToText(p.desc()); },
          "The ProgramDesc in protobuf text format.")
      .def(
          "serialize", [](const Program& p) { return py::bytes(p.desc().SerializeAsString()); },
          "The ProgramDesc's binary protobuf encoding.")
      .def(
          "clone", [](const Program& p, bool for_test) { return for_test ? p.CloneForTest() : p; },
          py::arg("for_test") = false,
          "A copy; for_test switches dropout to its inference behaviour (Program::CloneForTest).")
      .def(
          "save", [](const Program& p, const std::string& path) { SaveProgram(p.desc(), path); },
          py::arg("path"), "Writes a program file (.pbtxt: text, else binary).")
      .def_static(
          "load", [](const std::string& path) { return Program(LoadProgram(path)); },
          py::arg("path"), "Reads a program file written by save() or rill.")
      .def_property(
          "random_seed", [](const Program& p) { return p.desc().random_seed(); },
          &Program::set_random_seed)
      .def("num_blocks", [](const Program& p) { return p.desc().blocks_size(); })
      .def(
          "op_types",
          [](const Program& p, int block) {
            RILL_CHECK(block >= 0 && block < p.desc().blocks_size(), kOutOfRange, "block ", block,
                       " of a program with ", p.desc().blocks_size(), " blocks");
            std::vector<std::string> types;
            for (const auto& op : p.desc().blocks(block).ops()) types.push_back(op.type());
            return types;
          },
          py::arg("block") = 0);
}

void BindBuilder(py::module_& module) {
  py::class_<Var>(module, "Var", "A declared variable: name, shape, dtype.")
      .def_readonly("name", &Var::name)
      .def_readonly("shape", &Var::shape)
      .def_property_readonly("dtype", [](const Var& v) { return DataTypeName(v.dtype); });

  using B = Builder;
  py::class_<B>(module, "Builder",
                "Appends layers to a main and a startup program (rill/builder.h).")
      .def(py::init<Program*, Program*, uint64_t>(), py::arg("main"), py::arg("startup"),
           py::arg("seed") = 0, py::keep_alive<1, 2>(), py::keep_alive<1, 3>())
      .def("data",
           [](B& b, const std::string& name, const Shape& shape, const std::string& dtype) {
             return b.Data(name, shape, ParseDataType(dtype));
           })
      .def("main_program", &B::main, py::return_value_policy::reference)
      .def("startup_program", &B::startup, py::return_value_policy::reference)
      .def("lookup", &B::Lookup)
      .def(
          "append_op",
          [](B& b, const std::string& type, const VarSlots& inputs, const OutputCounts& outputs,
             const std::vector<std::pair<std::string, AttrValue>>& attrs) {
            return b.AppendOp(type, inputs, outputs,
                              [&attrs](proto::OpDesc* op) { SetAttrs(op, attrs); });
          },
          py::arg("type"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs"),
          "Appends an op of any registered type (Builder::AppendOp); returns its outputs.")
      .def("fc",
           [](B& b, const Var& x, int size, const std::string& act, int num_flatten_dims) {
             return b.Fc(x, size, ParseActivation(act), num_flatten_dims);
           })
      .def("activate", [](B& b, const Var& x,
                          const std::string& act) { return b.Activate(x, ParseActivation(act)); })
      .def("conv2d",
           [](B& b, const Var& x, int filters, int kernel_size, int stride, int padding,
              const std::string& act, int groups) {
             return b.Conv2d(x, filters, kernel_size, stride, padding, ParseActivation(act),
                             groups);
           })
      .def("pool2d", &B::Pool2d)
      .def("dropout", &B::Dropout)
      .def(
          "batch_norm",
          [](B& b, const Var& x, const std::string& act, float momentum, float epsilon, bool sync) {
            const bool before = b.sync_batch_norm();
            b.set_sync_batch_norm(sync);
            Var y = b.BatchNorm(x, ParseActivation(act), momentum, epsilon);
            b.set_sync_batch_norm(before);
            return y;
          },
          py::arg("x"), py::arg("act"), py::arg("momentum"), py::arg("epsilon"),
          py::arg("sync") = false)
      .def("layer_norm", &B::LayerNorm)
      .def("softmax", py::overload_cast<const Var&, int>(&B::Softmax))
      .def("masked_softmax", &B::MaskedSoftmax)
      .def("matmul", &B::MatMul)
      .def("embedding",
           [](B& b, const Var& ids, int64_t vocab, int64_t dim, const std::string& dtype,
              bool is_sparse) {
             return b.Embedding(ids, vocab, dim, ParseDataType(dtype), is_sparse);
           })
      .def("lstm",
           [](B& b, const Var& x, int hidden, const std::string& form,
              const std::optional<Var>& length) {
             const RecurrentOutputs r = b.Lstm(x, hidden, ParseRnnForm(form), length);
             return std::vector<Var>{r.out, r.last_hidden, r.last_cell};
           })
      .def("gru",
           [](B& b, const Var& x, int hidden, const std::string& form,
              const std::optional<Var>& length) {
             const RecurrentOutputs r = b.Gru(x, hidden, ParseRnnForm(form), length);
             return std::vector<Var>{r.out, r.last_hidden};
           })
      .def("sequence_mask",
           [](B& b, const Var& length, int64_t maxlen, const std::string& dtype) {
             return b.SequenceMask(length, maxlen, ParseDataType(dtype));
           })
      .def("multi_head_self_attention", &B::MultiHeadSelfAttention)
      .def("transformer_encoder_layer", &B::TransformerEncoderLayer)
      .def("reshape", &B::Reshape)
      .def("concat", &B::Concat)
      .def("split", &B::Split)
      .def("transpose", &B::Transpose)
      .def("scale", &B::Scale)
      .def("cross_entropy", &B::CrossEntropy)
      .def("softmax_with_cross_entropy", &B::SoftmaxWithCrossEntropy)
      .def("mean", &B::Mean)
      .def("accuracy", &B::Accuracy)
      .def("add", &B::Add)
      .def("sub", &B::Sub)
      .def("mul", &B::Mul)
      .def("div", &B::Div)
      .def("constant",
           [](B& b, const Shape& shape, float value, const std::string& dtype) {
             return b.Constant(shape, value, ParseDataType(dtype));
           })
      .def("assign", &B::Assign)
      .def("less_than", &B::LessThan)
      .def("increment", &B::Increment)
      .def("read_step", &B::ReadStep)
      .def("write_step", &B::WriteStep)
      .def("constant_batch_size_like",
           [](B& b, const Var& input, const std::vector<int64_t>& shape, float value,
              const std::string& dtype, int input_dim, int output_dim) {
             return b.ConstantBatchSizeLike(input, Shape(shape.begin(), shape.end()), value,
                                            ParseDataType(dtype), input_dim, output_dim);
           })
      // Control flow: blocks opened and closed around the ops that go in them
      // (layers.While(...).block(), layers.Go()), then the op that runs them.
      .def("open_sub_block", &B::OpenSubBlock)
      .def("close_sub_block", &B::CloseSubBlock)
      .def("current_block", &B::current_block)
      .def("while_op", py::overload_cast<const Var&, int>(&B::While))
      .def("go_op", py::overload_cast<int>(&B::Go))
      .def("parallel_do_op",
           py::overload_cast<int, const std::vector<Var>&, int, const std::vector<Var>&>(
               &B::ParallelDo))
      .def("make_channel",
           [](B& b, const Shape& shape, const std::string& dtype, int capacity) {
             return b.MakeChannel(shape, ParseDataType(dtype), capacity);
           })
      .def("channel_send", &B::ChannelSend)
      .def("channel_recv", &B::ChannelRecv)
      .def("channel_recv_into", &B::ChannelRecvInto)
      .def("channel_close", &B::ChannelClose)
      .def("select_recv_vars", &B::SelectRecvVars)
      // cases: (kind "recv" | "send" | "default", channel, value, out, status,
      // block) each, None where a kind has none (layers.Select).
      .def("select_op",
           [](B& b,
              const std::vector<std::tuple<std::string, std::optional<Var>, std::optional<Var>,
                                           std::optional<Var>, std::optional<Var>, int>>& cases) {
             std::vector<B::SelectBlock> blocks;
             for (const auto& [kind, channel, value, out, status, block] : cases) {
               B::SelectBlock c;
               c.kind = kind == "recv"   ? B::SelectCase::Kind::kRecv
                        : kind == "send" ? B::SelectCase::Kind::kSend
                                         : B::SelectCase::Kind::kDefault;
               c.channel = channel.value_or(Var{});
               c.value = value.value_or(Var{});
               c.out = out.value_or(Var{});
               c.status = status.value_or(Var{});
               c.block = block;
               blocks.push_back(std::move(c));
             }
             b.Select(blocks);
           });
}

void BindTraining(py::module_& module) {
  module.def(
      "append_backward",
      [](Program& program, const std::string& loss, const std::set<std::string>& no_grad) {
        return PairsToList(AppendBackward(&program, loss, no_grad));
      },
      py::arg("program"), py::arg("loss"), py::arg("no_grad") = std::set<std::string>());

  py::class_<Optimizer>(module, "Optimizer", "Backward plus one update op per parameter.")
      .def("set_l2", &Optimizer::set_l2, py::return_value_policy::reference_internal)
      .def("set_clip_global_norm", &Optimizer::set_clip_global_norm,
           py::return_value_policy::reference_internal)
      .def("set_placeable", &Optimizer::set_placeable, py::arg("placeable"),
           py::return_value_policy::reference_internal,
           "Puts the updates in a placeable block (the transpiler moves them to servers).")
      .def("minimize", [](Optimizer& o, Builder& b,
                          const Var& loss) { return PairsToList(o.Minimize(b, loss)); })
      .def(
          "set_warmup_cosine_decay",
          [](Optimizer& o, int warmup_steps, int decay_steps, float min_ratio) -> Optimizer& {
            return o.set_learning_rate_schedule(
                WarmupCosineDecay(warmup_steps, decay_steps, min_ratio));
          },
          py::arg("warmup_steps"), py::arg("decay_steps"), py::arg("min_ratio") = 0.0f,
          py::return_value_policy::reference_internal)
      .def_property_readonly("learning_rate_var", &Optimizer::learning_rate_var);
  py::class_<SGD, Optimizer>(module, "SGD").def(py::init<float>(), py::arg("learning_rate"));
  py::class_<Momentum, Optimizer>(module, "Momentum")
      .def(py::init<float, float, bool>(), py::arg("learning_rate"), py::arg("momentum") = 0.9f,
           py::arg("use_nesterov") = false);
  py::class_<Adam, Optimizer>(module, "Adam")
      .def(py::init<float, float, float, float>(), py::arg("learning_rate"),
           py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f, py::arg("epsilon") = 1e-8f);
  py::class_<AdamW, Adam>(module, "AdamW")
      .def(py::init<float, float, float, float, float>(), py::arg("learning_rate"),
           py::arg("weight_decay") = 0.01f, py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f,
           py::arg("epsilon") = 1e-8f);
}

}  // namespace

void BindPrograms(py::module_& module) {
  BindErrors(module);
  BindProgram(module);
  BindBuilder(module);
  BindTraining(module);
}

}  // namespace rill::python

PYBIND11_MODULE(_core, module) {
  module.doc() = "Rill's C++ API, bound for the rill package; import rill, not this.";
  module.attr("version") = rill::Version();
  rill::python::BindPrograms(module);
  rill::python::BindExecutors(module);
  rill::python::BindTools(module);
}
