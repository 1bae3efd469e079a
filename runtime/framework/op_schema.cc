#include "rill/op_schema.h"

#include <algorithm>
#include <cmath>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "rill/shape_context.h"

namespace rill {

const char* AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kBool: return "bool";
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kString: return "string";
    case AttrType::kInts: return "int list";
    case AttrType::kFloats: return "float list";
    case AttrType::kStrings: return "string list";
    case AttrType::kBlock: return "block";
    case AttrType::kBlocks: return "block list";
  }
  return "unknown";
}

AttrType AttrTypeOf(const proto::Attr& attr) {
  switch (attr.value_case()) {
    case proto::Attr::kB: return AttrType::kBool;
    case proto::Attr::kI: return AttrType::kInt;
    case proto::Attr::kF: return AttrType::kFloat;
    case proto::Attr::kS: return AttrType::kString;
    case proto::Attr::kInts: return AttrType::kInts;
    case proto::Attr::kFloats: return AttrType::kFloats;
    case proto::Attr::kStrings: return AttrType::kStrings;
    case proto::Attr::kBlock: return AttrType::kBlock;
    case proto::Attr::kBlocks: return AttrType::kBlocks;
    case proto::Attr::VALUE_NOT_SET: break;
  }
  Fail(ErrorCode::kInvalidArgument, "attribute ", attr.name(), " has no value");
}

OpSchema::OpSchema(std::string type) : type_(std::move(type)) {}

OpSchema& OpSchema::Doc(std::string doc) {
  doc_ = std::move(doc);
  return *this;
}

OpSchema& OpSchema::Input(std::string name, std::string doc, unsigned flags) {
  inputs_.push_back({std::move(name), std::move(doc), flags});
  return *this;
}

OpSchema& OpSchema::Output(std::string name, std::string doc, unsigned flags) {
  outputs_.push_back({std::move(name), std::move(doc), flags});
  return *this;
}

OpSchema& OpSchema::AddAttr(std::string name, AttrType type, std::optional<proto::Attr> value,
                            std::string doc, AttrCheck check) {
  if (value) value->set_name(name);
  attrs_.push_back({std::move(name), std::move(doc), type, std::move(value), std::move(check)});
  return *this;
}

OpSchema& OpSchema::Attr(std::string name, bool default_value, std::string doc) {
  proto::Attr a;
  a.set_b(default_value);
  return AddAttr(std::move(name), AttrType::kBool, a, std::move(doc), {});
}

OpSchema& OpSchema::Attr(std::string name, int default_value, std::string doc, AttrCheck check) {
  proto::Attr a;
  a.set_i(default_value);
  return AddAttr(std::move(name), AttrType::kInt, a, std::move(doc), std::move(check));
}

OpSchema& OpSchema::Attr(std::string name, float default_value, std::string doc, AttrCheck check) {
  proto::Attr a;
  a.set_f(default_value);
  return AddAttr(std::move(name), AttrType::kFloat, a, std::move(doc), std::move(check));
}

OpSchema& OpSchema::Attr(std::string name, const char* default_value, std::string doc,
                         AttrCheck check) {
  proto::Attr a;
  a.set_s(default_value);
  return AddAttr(std::move(name), AttrType::kString, a, std::move(doc), std::move(check));
}

OpSchema& OpSchema::Attr(std::string name, std::vector<int64_t> default_value, std::string doc,
                         AttrCheck check) {
  proto::Attr a;
  for (auto v : default_value) a.mutable_ints()->add_values(v);
  if (default_value.empty()) a.mutable_ints();
  return AddAttr(std::move(name), AttrType::kInts, a, std::move(doc), std::move(check));
}

OpSchema& OpSchema::Attr(std::string name, std::vector<float> default_value, std::string doc,
                         AttrCheck check) {
  proto::Attr a;
  for (auto v : default_value) a.mutable_floats()->add_values(v);
  if (default_value.empty()) a.mutable_floats();
  return AddAttr(std::move(name), AttrType::kFloats, a, std::move(doc), std::move(check));
}

OpSchema& OpSchema::Attr(std::string name, std::vector<std::string> default_value, std::string doc,
                         AttrCheck check) {
  proto::Attr a;
  for (auto& v : default_value) a.mutable_strings()->add_values(std::move(v));
  if (default_value.empty()) a.mutable_strings();
  return AddAttr(std::move(name), AttrType::kStrings, a, std::move(doc), std::move(check));
}

OpSchema& OpSchema::AllowNonFinite(const std::string& name) {
  auto it = std::find_if(attrs_.begin(), attrs_.end(),
                         [&](const AttrSpec& spec) { return spec.name == name; });
  RILL_CHECK(it != attrs_.end() && (it->type == AttrType::kFloat || it->type == AttrType::kFloats),
             kInvalidArgument, "op ", type_, ": AllowNonFinite(\"", name,
             "\") names no float attribute declared before it");
  it->non_finite_allowed = true;
  return *this;
}

OpSchema& OpSchema::RequiredAttr(std::string name, AttrType type, std::string doc,
                                 AttrCheck check) {
  return AddAttr(std::move(name), type, std::nullopt, std::move(doc), std::move(check));
}

OpSchema& OpSchema::OptionalBlockAttr(std::string name, std::string doc) {
  proto::Attr a;
  a.set_block(-1);
  return AddAttr(std::move(name), AttrType::kBlock, a, std::move(doc), {});
}

OpSchema& OpSchema::InferShape(InferShapeFn fn) {
  infer_shape_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::Kernel(Place::Kind place, KernelFn fn) {
  kernels_[place] = std::move(fn);
  return *this;
}

OpSchema& OpSchema::Grad(GradMakerFn fn) {
  grad_maker_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::Blocking(TryKernelFn try_first) {
  blocking_ = true;
  try_kernel_ = std::move(try_first);
  return *this;
}

OpSchema& OpSchema::Barrier() {
  barrier_ = true;
  return *this;
}

OpSchema& OpSchema::DefaultGrad() {
  // Captures slot lists by value: the schema is moved into the registry later.
  std::vector<SlotSpec> inputs = inputs_;
  std::vector<SlotSpec> outputs = outputs_;
  std::string type = type_;
  grad_maker_ = [inputs, outputs, type](const proto::OpDesc& fwd) {
    proto::OpDesc grad;
    grad.set_type(type + "_grad");
    for (const auto& s : inputs) {
      auto names = InputVars(fwd, s.name);
      if (!names.empty()) SetInput(&grad, s.name, names);
    }
    for (const auto& s : outputs) {
      auto names = OutputVars(fwd, s.name);
      if (names.empty()) continue;
      SetInput(&grad, s.name, names);
      std::vector<std::string> grads;
      for (const auto& n : names) grads.push_back(GradVarName(n));
      SetInput(&grad, GradVarName(s.name), grads);
    }
    for (const auto& s : inputs) {
      if (!s.differentiable()) continue;
      auto names = InputVars(fwd, s.name);
      if (names.empty()) continue;
      std::vector<std::string> grads;
      for (const auto& n : names) grads.push_back(GradVarName(n));
      SetOutput(&grad, GradVarName(s.name), grads);
    }
    *grad.mutable_attrs() = fwd.attrs();
    return std::vector<proto::OpDesc>{grad};
  };
  return *this;
}

OpSchema& OpSchema::GradBlock(std::string attr) {
  grad_block_ = std::move(attr);
  return *this;
}

OpSchema& OpSchema::SparseOutput(std::string slot, std::string attr) {
  sparse_outputs_.emplace_back(std::move(slot), std::move(attr));
  return *this;
}

bool OpSchema::OutputIsSparse(const proto::OpDesc& op, const std::string& slot) const {
  for (const auto& [s, attr] : sparse_outputs_) {
    if (s != slot) continue;
    const proto::Attr* value = ::rill::FindAttr(op, attr);
    if (value != nullptr && value->value_case() == proto::Attr::kB && value->b()) return true;
  }
  return false;
}

OpSchema& OpSchema::DefaultGradPerInput() {
  DefaultGrad();
  GradMakerFn whole = std::move(grad_maker_);
  grad_maker_ = [whole](const proto::OpDesc& fwd) {
    std::vector<proto::OpDesc> split;
    for (const proto::OpDesc& grad : whole(fwd)) {
      for (int k = 0; k < grad.outputs_size(); ++k) {
        proto::OpDesc one = grad;
        one.clear_outputs();
        *one.add_outputs() = grad.outputs(k);
        split.push_back(std::move(one));
      }
    }
    return split;
  };
  return *this;
}

static const SlotSpec* FindSlot(const std::vector<SlotSpec>& slots, const std::string& name) {
  for (const auto& s : slots) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const SlotSpec* OpSchema::FindInput(const std::string& name) const {
  return FindSlot(inputs_, name);
}
const SlotSpec* OpSchema::FindOutput(const std::string& name) const {
  return FindSlot(outputs_, name);
}

const AttrSpec* OpSchema::FindAttr(const std::string& name) const {
  for (const auto& a : attrs_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const KernelFn* OpSchema::FindKernel(Place::Kind place) const {
  // The asynchronous CPU device runs the CPU kernels, on its streams' threads.
  if (place == Place::Kind::kAsyncCpu) place = Place::Kind::kCpu;
  auto it = kernels_.find(place);
  return it == kernels_.end() ? nullptr : &it->second;
}

AttrCheck AtLeast(int64_t min) {
  return [min](const proto::Attr& a) -> std::string {
    if (a.value_case() == proto::Attr::kI && a.i() < min) {
      return StrCat("must be at least ", min, ", is ", a.i());
    }
    if (a.value_case() == proto::Attr::kInts) {
      for (auto v : a.ints().values()) {
        if (v < min) return StrCat("every element must be at least ", min, ", one is ", v);
      }
    }
    return {};
  };
}

AttrCheck InRange(double min, double max) {
  return [min, max](const proto::Attr& a) -> std::string {
    double v = a.value_case() == proto::Attr::kI ? static_cast<double>(a.i()) : a.f();
    if (!(v >= min && v <= max)) return StrCat("must be in [", min, ", ", max, "], is ", v);
    return {};
  };
}

AttrCheck OneOf(std::vector<std::string> allowed) {
  return [allowed](const proto::Attr& a) -> std::string {
    if (std::find(allowed.begin(), allowed.end(), a.s()) != allowed.end()) return {};
    std::string list;
    for (const auto& s : allowed) list += (list.empty() ? "" : ", ") + s;
    return StrCat("must be one of {", list, "}, is \"", a.s(), "\"");
  };
}

InferShapeFn SameShapeAs(std::string in, std::string out) {
  return [in, out](ShapeContext& ctx) {
    for (int i = 0; i < ctx.OutputCount(out); ++i) {
      ctx.SetOutput(out, ctx.InputShape(in, i), ctx.InputType(in, i), i);
    }
  };
}

}  // namespace rill
