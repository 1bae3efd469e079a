#include "rill/builder.h"

#include <cmath>
#include <map>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "rill/validate.h"

namespace rill {
namespace {

std::vector<std::string> Names(const std::vector<Var>& vars) {
  std::vector<std::string> names;
  names.reserve(vars.size());
  for (const auto& v : vars) names.push_back(v.name);
  return names;
}

const char* ActivationOp(Activation act) {
  switch (act) {
    case Activation::kNone: return nullptr;
    case Activation::kRelu: return "relu";
    case Activation::kSigmoid: return "sigmoid";
    case Activation::kTanh: return "tanh";
    case Activation::kSoftmax: return "softmax";
    case Activation::kGelu: return "gelu";
  }
  return nullptr;
}

}  // namespace

Builder::Builder(Program* main, Program* startup, uint64_t seed) : main_(main), startup_(startup) {
  main_->set_random_seed(seed);
  startup_->set_random_seed(seed);
}

proto::VarDesc* Builder::Declare(Program* program, const std::string& name, const Shape& shape,
                                 DataType dtype, int block_index) {
  proto::BlockDesc* block = program->desc().mutable_blocks(block_index);
  proto::VarDesc* var = FindLocalVarDesc(block, name);
  if (var == nullptr) {
    var = block->add_vars();
    var->set_name(name);
  }
  var->set_kind(proto::DENSE_TENSOR);
  var->set_dtype(ToProto(dtype));
  var->clear_shape();
  for (auto d : shape) var->add_shape(d);
  return var;
}

Var Builder::Lookup(const std::string& name) const {
  const proto::VarDesc* desc = FindVarDesc(main_->desc(), block_, name);
  RILL_CHECK(desc != nullptr, kNotFound, "variable \"", name,
             "\" is not declared in the main program");
  return Var{name, VarShape(*desc), FromProto(desc->dtype())};
}

Var Builder::Data(const std::string& name, const Shape& shape, DataType dtype) {
  RILL_CHECK(FindVarDesc(main_->desc(), 0, name) == nullptr, kInvalidArgument, "data variable \"",
             name, "\" is already declared");
  Declare(main_, name, shape, dtype)->set_stop_gradient(true);
  return Var{name, shape, dtype};
}

Var Builder::Parameter(const std::string& name, const Shape& shape, Initializer init,
                       DataType dtype) {
  for (auto d : shape) {
    RILL_CHECK(d > 0, kInvalidArgument, "parameter \"", name, "\" needs a concrete shape, got ",
               ShapeToString(shape));
  }
  auto* var = Declare(main_, name, shape, dtype);
  var->set_persistable(true);
  var->set_parameter(true);
  Declare(startup_, name, shape, dtype)->set_persistable(true);
  Var v{name, shape, dtype};
  AppendInitializer(v, init);
  return v;
}

Var Builder::Persistable(const std::string& name, const Shape& shape, float value, DataType dtype) {
  proto::VarDesc* var = Declare(main_, name, shape, dtype);
  var->set_persistable(true);
  var->set_stop_gradient(true);
  Declare(startup_, name, shape, dtype)->set_persistable(true);
  Var v{name, shape, dtype};
  AppendInitializer(v, Initializer::Constant(value));
  return v;
}

void Builder::AppendInitializer(const Var& var, Initializer init) {
  proto::OpDesc* op = startup_->root()->add_ops();
  SetOutput(op, "Out", {var.name});
  SetAttr(op, "shape", std::vector<int64_t>(var.shape.begin(), var.shape.end()));
  SetAttr(op, "dtype", std::string(DataTypeName(var.dtype)));
  // Fan-in and fan-out as Fluid counts them: [in, out] for fc weights,
  // [out_channels, in_channels, kh, kw] for conv filters.
  double fan_in = 1, fan_out = 1;
  if (var.shape.size() == 2) {
    fan_in = static_cast<double>(var.shape[0]);
    fan_out = static_cast<double>(var.shape[1]);
  } else if (var.shape.size() > 2) {
    const double receptive =
        static_cast<double>(DimProduct(var.shape, 2, static_cast<int>(var.shape.size())));
    fan_in = static_cast<double>(var.shape[1]) * receptive;
    fan_out = static_cast<double>(var.shape[0]) * receptive;
  } else if (var.shape.size() == 1) {
    fan_in = fan_out = static_cast<double>(var.shape[0]);
  }
  switch (init.kind) {
    case Initializer::Kind::kConstant:
      op->set_type("fill_constant");
      SetAttr(op, "value", init.a);
      break;
    case Initializer::Kind::kUniform:
      op->set_type("uniform_random");
      SetAttr(op, "min", init.a);
      SetAttr(op, "max", init.b);
      break;
    case Initializer::Kind::kNormal:
      op->set_type("gaussian_random");
      SetAttr(op, "mean", init.a);
      SetAttr(op, "std", init.b);
      break;
    case Initializer::Kind::kXavierUniform: {
      const float limit = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
      op->set_type("uniform_random");
      SetAttr(op, "min", -limit);
      SetAttr(op, "max", limit);
      break;
    }
    case Initializer::Kind::kXavierNormal:
      op->set_type("gaussian_random");
      SetAttr(op, "mean", 0.0f);
      SetAttr(op, "std", static_cast<float>(std::sqrt(2.0 / (fan_in + fan_out))));
      break;
  }
}

Var Builder::Constant(const Shape& shape, float value, DataType dtype) {
  return AppendOp("fill_constant", {}, {{"Out", 1}}, [&](proto::OpDesc* op) {
    SetAttr(op, "shape", std::vector<int64_t>(shape.begin(), shape.end()));
    SetAttr(op, "dtype", std::string(DataTypeName(dtype)));
    SetAttr(op, "value", value);
  })[0];
}

std::vector<Var> Builder::AppendOp(const std::string& type, const VarSlots& inputs,
                                   const OutputCounts& outputs, const OpAttrs& attrs) {
  return AppendOpUpdating(type, inputs, outputs, {}, attrs);
}

std::vector<Var> Builder::AppendOpUpdating(const std::string& type, const VarSlots& inputs,
                                           const OutputCounts& outputs, const VarSlots& updated,
                                           const OpAttrs& attrs) {
  const std::string prefix = main_->UniqueName(type);
  VarSlots named;
  for (const auto& [slot, count] : outputs) {
    std::vector<Var> vars;
    for (int i = 0; i < count; ++i) {
      std::string name = prefix + "." + slot;
      if (count > 1) name += "_" + std::to_string(i);
      vars.push_back(Var{name, {}, DataType::kFloat32});
    }
    named.push_back({slot, vars});
  }
  proto::OpDesc op;
  op.set_type(type);
  op.set_role(role_);
  for (const auto& [slot, vars] : inputs) SetInput(&op, slot, Names(vars));
  for (const auto& [slot, vars] : named) SetOutput(&op, slot, Names(vars));
  for (const auto& [slot, vars] : updated) SetOutput(&op, slot, Names(vars));
  if (attrs) attrs(&op);
  VarInfoMap infos;
  for (const auto* slots : {&inputs, &updated}) {
    for (const auto& [slot, vars] : *slots) {
      for (const auto& v : vars) infos[v.name] = VarInfo{v.shape, v.dtype};
    }
  }
  try {
    InferOpShapes(op, &infos);
  } catch (const Error& e) {
    throw Error(e.code(), StrCat("appending op ", type, " (", prefix, "): ", e.message()));
  }
  for (const auto& [slot, vars] : updated) {
    for (const auto& v : vars) {
      const VarInfo& info = infos.at(v.name);
      RILL_CHECK(ShapesCompatible(info.shape, v.shape) && info.dtype == v.dtype, kInvalidArgument,
                 "appending op ", type, " (", prefix, "): output ", slot, " would make ", v.name,
                 " ", DataTypeName(info.dtype), " ", ShapeToString(info.shape), ", but it is ",
                 DataTypeName(v.dtype), " ", ShapeToString(v.shape));
    }
  }
  std::vector<Var> result;
  for (auto& [slot, vars] : named) {
    for (auto& v : vars) {
      auto it = infos.find(v.name);
      RILL_CHECK(it != infos.end(), kInternal, "op ", type, " did not infer output ", slot);
      v.shape = it->second.shape;
      v.dtype = it->second.dtype;
      Declare(main_, v.name, v.shape, v.dtype, block_);
      result.push_back(v);
    }
  }
  *main_->desc().mutable_blocks(block_)->add_ops() = std::move(op);
  return result;
}

void Builder::AppendOpTo(const std::string& type, const VarSlots& inputs, const VarSlots& outputs,
                         const OpAttrs& attrs) {
  proto::OpDesc* op = main_->desc().mutable_blocks(block_)->add_ops();
  op->set_type(type);
  op->set_role(role_);
  for (const auto& [slot, vars] : inputs) SetInput(op, slot, Names(vars));
  for (const auto& [slot, vars] : outputs) SetOutput(op, slot, Names(vars));
  if (attrs) attrs(op);
}

Var Builder::Activate(const Var& x, Activation act) {
  const char* type = ActivationOp(act);
  if (type == nullptr) return x;
  return AppendOp(type, {{"X", {x}}}, {{"Out", 1}})[0];
}

Var Builder::Fc(const Var& x, int size, Activation act, int num_flatten_dims,
                Initializer weight_init, Initializer bias_init) {
  RILL_CHECK(num_flatten_dims >= 1 && num_flatten_dims < static_cast<int>(x.shape.size()),
             kInvalidArgument, "fc: num_flatten_dims ", num_flatten_dims, " does not fit input ",
             x.name, " of shape ", ShapeToString(x.shape));
  const int64_t in = DimProduct(x.shape, num_flatten_dims, static_cast<int>(x.shape.size()));
  const std::string name = main_->UniqueName("fc");
  Var w = Parameter(name + ".w", {in, size}, weight_init, x.dtype);
  Var b = Parameter(name + ".b", {size}, bias_init, x.dtype);
  Var h = AppendOp("mul", {{"X", {x}}, {"Y", {w}}}, {{"Out", 1}},
                   [&](proto::OpDesc* op) { SetAttr(op, "x_num_col_dims", num_flatten_dims); })[0];
  Var out = AppendOp("elementwise_add", {{"X", {h}}, {"Y", {b}}}, {{"Out", 1}})[0];
  return Activate(out, act);
}

Var Builder::Conv2d(const Var& x, int filters, int kernel_size, int stride, int padding,
                    Activation act, int groups, bool bias) {
  RILL_CHECK(x.shape.size() == 4, kInvalidArgument, "conv2d: input ", x.name,
             " must be [N, C, H, W], is ", ShapeToString(x.shape));
  RILL_CHECK(groups >= 1 && x.shape[1] % groups == 0, kInvalidArgument, "conv2d: ", x.shape[1],
             " channels do not split into ", groups, " groups");
  const std::string name = main_->UniqueName("conv2d");
  Var w = Parameter(name + ".w", {filters, x.shape[1] / groups, kernel_size, kernel_size},
                    Initializer::XavierUniform(), x.dtype);
  Var b;
  if (bias) b = Parameter(name + ".b", {filters}, Initializer::Constant(0), x.dtype);
  Var y = AppendOp("conv2d", {{"Input", {x}}, {"Filter", {w}}}, {{"Output", 1}},
                   [&](proto::OpDesc* op) {
                     SetAttr(op, "strides", std::vector<int64_t>{stride, stride});
                     SetAttr(op, "paddings", std::vector<int64_t>{padding, padding});
                     SetAttr(op, "groups", groups);
                   })[0];
  if (!bias) return Activate(y, act);
  Var out = AppendOp("elementwise_add", {{"X", {y}}, {"Y", {b}}}, {{"Out", 1}},
                     [](proto::OpDesc* op) { SetAttr(op, "axis", 1); })[0];
  return Activate(out, act);
}

Var Builder::Pool2d(const Var& x, int kernel_size, const std::string& type, int stride,
                    int padding) {
  if (stride < 0) stride = kernel_size;
  return AppendOp("pool2d", {{"X", {x}}}, {{"Out", 1}}, [&](proto::OpDesc* op) {
    SetAttr(op, "pooling_type", type);
    SetAttr(op, "ksize", std::vector<int64_t>{kernel_size, kernel_size});
    SetAttr(op, "strides", std::vector<int64_t>{stride, stride});
    SetAttr(op, "paddings", std::vector<int64_t>{padding, padding});
  })[0];
}

Var Builder::CrossEntropy(const Var& probabilities, const Var& label) {
  return AppendOp("cross_entropy", {{"X", {probabilities}}, {"Label", {label}}}, {{"Y", 1}})[0];
}

Var Builder::SoftmaxWithCrossEntropy(const Var& logits, const Var& label) {
  return AppendOp("softmax_with_cross_entropy", {{"Logits", {logits}}, {"Label", {label}}},
                  {{"Softmax", 1}, {"Loss", 1}})[1];
}

Var Builder::Mean(const Var& x) { return AppendOp("mean", {{"X", {x}}}, {{"Out", 1}})[0]; }

Var Builder::SquareErrorCost(const Var& x, const Var& y) {
  Var diff = Sub(x, y);
  return AppendOp("square", {{"X", {diff}}}, {{"Out", 1}})[0];
}

Var Builder::Accuracy(const Var& predictions, const Var& label, int k) {
  auto top = AppendOp("top_k", {{"X", {predictions}}}, {{"Out", 1}, {"Indices", 1}},
                      [&](proto::OpDesc* op) { SetAttr(op, "k", k); });
  return AppendOp("accuracy", {{"Out", {top[0]}}, {"Indices", {top[1]}}, {"Label", {label}}},
                  {{"Accuracy", 1}, {"Correct", 1}, {"Total", 1}})[0];
}

Var Builder::Dropout(const Var& x, float probability) {
  return AppendOp("dropout", {{"X", {x}}}, {{"Out", 1}, {"Mask", 1}},
                  [&](proto::OpDesc* op) { SetAttr(op, "dropout_prob", probability); })[0];
}

Var Builder::Embedding(const Var& ids, int64_t vocab, int64_t dim, DataType dtype, bool is_sparse) {
  Var table = Parameter(main_->UniqueName("embedding") + ".w", {vocab, dim},
                        Initializer::XavierUniform(), dtype);
  return AppendOp("lookup_table", {{"W", {table}}, {"Ids", {ids}}}, {{"Out", 1}},
                  [&](proto::OpDesc* op) {
                    if (is_sparse) SetAttr(op, "is_sparse", true);
                  })[0];
}

Var Builder::Reshape(const Var& x, const Shape& shape) {
  return AppendOp("reshape", {{"X", {x}}}, {{"Out", 1}}, [&](proto::OpDesc* op) {
    SetAttr(op, "shape", std::vector<int64_t>(shape.begin(), shape.end()));
  })[0];
}

Var Builder::Concat(const std::vector<Var>& xs, int axis) {
  return AppendOp("concat", {{"X", xs}}, {{"Out", 1}},
                  [&](proto::OpDesc* op) { SetAttr(op, "axis", axis); })[0];
}

std::vector<Var> Builder::Split(const Var& x, int num, int axis) {
  return AppendOp("split", {{"X", {x}}}, {{"Out", num}}, [&](proto::OpDesc* op) {
    SetAttr(op, "num", num);
    SetAttr(op, "axis", axis);
  });
}

Var Builder::Transpose(const Var& x, const std::vector<int64_t>& perm) {
  return AppendOp("transpose", {{"X", {x}}}, {{"Out", 1}},
                  [&](proto::OpDesc* op) { SetAttr(op, "axis", perm); })[0];
}

Var Builder::Scale(const Var& x, float scale, float bias) {
  return AppendOp("scale", {{"X", {x}}}, {{"Out", 1}}, [&](proto::OpDesc* op) {
    SetAttr(op, "scale", scale);
    SetAttr(op, "bias", bias);
  })[0];
}

static OpAttrs AxisAttr(int axis) {
  return [axis](proto::OpDesc* op) { SetAttr(op, "axis", axis); };
}

Var Builder::Add(const Var& x, const Var& y, int axis) {
  return AppendOp("elementwise_add", {{"X", {x}}, {"Y", {y}}}, {{"Out", 1}}, AxisAttr(axis))[0];
}
Var Builder::Sub(const Var& x, const Var& y, int axis) {
  return AppendOp("elementwise_sub", {{"X", {x}}, {"Y", {y}}}, {{"Out", 1}}, AxisAttr(axis))[0];
}
Var Builder::Mul(const Var& x, const Var& y, int axis) {
  return AppendOp("elementwise_mul", {{"X", {x}}, {"Y", {y}}}, {{"Out", 1}}, AxisAttr(axis))[0];
}
Var Builder::Div(const Var& x, const Var& y, int axis) {
  return AppendOp("elementwise_div", {{"X", {x}}, {"Y", {y}}}, {{"Out", 1}}, AxisAttr(axis))[0];
}

Var Builder::Sum(const std::vector<Var>& xs) {
  return AppendOp("sum", {{"X", xs}}, {{"Out", 1}})[0];
}

int Builder::OpenSubBlock() {
  proto::BlockDesc* sub = main_->desc().add_blocks();
  const int index = main_->desc().blocks_size() - 1;
  sub->set_idx(index);
  sub->set_parent_idx(block_);
  block_ = index;
  return index;
}

void Builder::CloseSubBlock(int index) {
  RILL_CHECK(index == block_ && index > 0, kInvalidArgument, "closing block ", index, " but block ",
             block_, " is the one open (sub-blocks close innermost first)");
  block_ = main_->desc().blocks(index).parent_idx();
}

int Builder::SubBlock(const std::function<void(Builder&)>& body) {
  const int index = OpenSubBlock();
  try {
    body(*this);
  } catch (...) {
    CloseSubBlock(index);
    throw;
  }
  CloseSubBlock(index);
  return index;
}

std::vector<Var> Builder::ParallelDo(int places, const std::vector<Var>& inputs,
                                     const std::function<std::vector<Var>(Builder&)>& body) {
  RILL_CHECK(places >= 1, kInvalidArgument, "parallel_do needs at least one place, got ", places);
  std::vector<Var> inner;
  const int sub = SubBlock([&](Builder& b) { inner = body(b); });
  return ParallelDo(places, inputs, sub, inner);
}

std::vector<Var> Builder::ParallelDo(int places, const std::vector<Var>& inputs, int sub_block,
                                     const std::vector<Var>& outputs) {
  RILL_CHECK(places >= 1, kInvalidArgument, "parallel_do needs at least one place, got ", places);
  CheckSubBlock(sub_block, "parallel_do");
  const int parent = block_;
  std::vector<Var> outer;
  // Each inner result is copied (by an assign op at the end of the sub-block)
  // to a variable of the enclosing block, which the places' copies are
  // concatenated into.
  const std::string prefix = main_->UniqueName("parallel_do");
  block_ = sub_block;
  try {
    for (size_t i = 0; i < outputs.size(); ++i) {
      Var out{prefix + ".out_" + std::to_string(i), outputs[i].shape, outputs[i].dtype};
      Declare(main_, out.name, out.shape, out.dtype, parent);
      AppendOpTo("assign", {{"X", {outputs[i]}}}, {{"Out", {out}}});
      outer.push_back(out);
    }
  } catch (...) {
    block_ = parent;
    throw;
  }
  block_ = parent;
  AppendOpTo("parallel_do", {{"Inputs", inputs}}, {{"Outputs", outer}}, [&](proto::OpDesc* op) {
    SetBlockAttr(op, "sub_block", sub_block);
    SetAttr(op, "places", places);
  });
  return outer;
}

void Builder::PlaceableBlock(const std::vector<Var>& inputs, const std::vector<Var>& outputs,
                             const std::function<void(Builder&)>& body) {
  const int sub = SubBlock(body);
  proto::Placement* placement = main_->desc().mutable_blocks(sub)->mutable_placement();
  placement->set_role(proto::Placement::ROLE_PSERVER);
  placement->set_index(-1);
  AppendOpTo("placeable_block", {{"X", inputs}}, {{"Out", outputs}},
             [&](proto::OpDesc* op) { SetBlockAttr(op, "sub_block", sub); });
}

Var Builder::MatMul(const Var& x, const Var& y, bool transpose_x, bool transpose_y, float alpha) {
  return AppendOp("matmul", {{"X", {x}}, {"Y", {y}}}, {{"Out", 1}}, [&](proto::OpDesc* op) {
    SetAttr(op, "transpose_X", transpose_x);
    SetAttr(op, "transpose_Y", transpose_y);
    if (alpha != 1.0f) SetAttr(op, "alpha", alpha);  // else the op's default
  })[0];
}

Var Builder::Softmax(const Var& x, int axis) {
  return AppendOp("softmax", {{"X", {x}}}, {{"Out", 1}},
                  [&](proto::OpDesc* op) { SetAttr(op, "axis", axis); })[0];
}

Var Builder::MaskedSoftmax(const Var& x, const Var& mask, int axis) {
  return AppendOp("softmax", {{"X", {x}}, {"Mask", {mask}}}, {{"Out", 1}},
                  [&](proto::OpDesc* op) { SetAttr(op, "axis", axis); })[0];
}

}  // namespace rill
