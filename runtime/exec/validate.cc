#include "rill/validate.h"

#include <set>

#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "runtime/desc/var_index.h"

namespace rill {
namespace {

// Raises errors that name where in the program they were found.
class Location {
 public:
  explicit Location(int block) : block_(block) {}
  void SetOp(int index, const std::string& type) {
    op_ = index;
    type_ = type;
  }
  template <class... Args>
  [[noreturn]] void Fail(ErrorCode code, const std::string& var, Args&&... args) const {
    std::string where = StrCat("block ", block_);
    if (op_ >= 0) where += StrCat(", op ", op_, " (", type_, ")");
    if (!var.empty()) where += StrCat(", variable \"", var, "\"");
    ::rill::Fail(code, where, ": ", std::forward<Args>(args)...);
  }

 private:
  int block_;
  int op_ = -1;
  std::string type_;
};

void CheckBlocks(const proto::ProgramDesc& program) {
  RILL_CHECK(program.blocks_size() > 0, kInvalidArgument, "program has no blocks");
  for (int b = 0; b < program.blocks_size(); ++b) {
    const auto& block = program.blocks(b);
    Location at(b);
    if (block.idx() != b)
      at.Fail(ErrorCode::kInvalidArgument, "", "block says its index is ", block.idx());
    if (b == 0 && block.parent_idx() != -1) {
      at.Fail(ErrorCode::kInvalidArgument, "", "the root block must have parent_idx -1, has ",
              block.parent_idx());
    }
    // Parents come first, so following parent links always terminates.
    if (b > 0 && (block.parent_idx() < 0 || block.parent_idx() >= b)) {
      at.Fail(ErrorCode::kInvalidArgument, "", "parent_idx ", block.parent_idx(),
              " must name an earlier block (0..", b - 1, ")");
    }
    std::set<std::string> names;
    for (const auto& var : block.vars()) {
      if (var.name().empty())
        at.Fail(ErrorCode::kInvalidArgument, "", "a variable has an empty name");
      if (!names.insert(var.name()).second) {
        at.Fail(ErrorCode::kInvalidArgument, var.name(), "declared twice");
      }
      if (var.kind() != proto::DENSE_TENSOR && var.kind() != proto::SELECTED_ROWS &&
          var.kind() != proto::CHANNEL && var.kind() != proto::READER) {
        at.Fail(ErrorCode::kInvalidArgument, var.name(), "unsupported variable kind ",
                static_cast<int>(var.kind()));
      }
      if (var.dtype() == proto::DT_INVALID || !proto::DataType_IsValid(var.dtype())) {
        at.Fail(ErrorCode::kInvalidArgument, var.name(), "invalid data type ",
                static_cast<int>(var.dtype()));
      }
      int64_t known = 1;
      for (auto d : var.shape()) {
        if (d < -1)
          at.Fail(ErrorCode::kInvalidArgument, var.name(), "shape dimension ", d,
                  " (must be >= -1)");
        if (d >= 0 && __builtin_mul_overflow(known, d, &known)) {
          at.Fail(ErrorCode::kOutOfRange, var.name(), "shape ", ShapeToString(VarShape(var)),
                  " has more elements than fit in 64 bits");
        }
      }
    }
  }
}

bool IsAncestorOrSelf(const proto::ProgramDesc& program, int ancestor, int block) {
  for (int hops = 0; block >= 0 && hops <= program.blocks_size(); ++hops) {
    if (block == ancestor) return true;
    block = program.blocks(block).parent_idx();
  }
  return false;
}

void CheckSlots(const VarIndex& visible, int b, const proto::OpDesc& op,
                const google::protobuf::RepeatedPtrField<proto::Slot>& given,
                const std::vector<SlotSpec>& specs, const char* direction, const Location& at) {
  std::set<std::string> seen;
  for (const auto& slot : given) {
    if (!seen.insert(slot.name()).second) {
      at.Fail(ErrorCode::kInvalidArgument, "", direction, " slot ", slot.name(), " appears twice");
    }
    const SlotSpec* spec = nullptr;
    for (const auto& s : specs) {
      if (s.name == slot.name()) spec = &s;
    }
    if (spec == nullptr) {
      at.Fail(ErrorCode::kInvalidArgument, "", "op type ", op.type(), " has no ", direction,
              " slot \"", slot.name(), "\"");
    }
    if (!spec->duplicable() && slot.vars_size() > 1) {
      at.Fail(ErrorCode::kInvalidArgument, slot.vars(1), direction, " slot ", slot.name(),
              " takes one variable, has ", slot.vars_size());
    }
    for (const auto& name : slot.vars()) {
      if (visible.Find(name) == nullptr) {
        at.Fail(ErrorCode::kNotFound, name, direction, " ", slot.name(),
                " names a variable not declared in block ", b, " or its ancestors");
      }
    }
  }
  for (const auto& spec : specs) {
    if (spec.optional()) continue;
    bool present = false;
    for (const auto& slot : given) present |= slot.name() == spec.name && slot.vars_size() > 0;
    if (!present) {
      at.Fail(ErrorCode::kInvalidArgument, "", "required ", direction, " slot \"", spec.name,
              "\" is missing");
    }
  }
}

void CheckAttrs(const proto::ProgramDesc& program, int b, const proto::OpDesc& op,
                const OpSchema& schema, const Location& at) {
  std::set<std::string> seen;
  for (const auto& attr : op.attrs()) {
    if (!seen.insert(attr.name()).second) {
      at.Fail(ErrorCode::kInvalidArgument, "", "attribute ", attr.name(), " appears twice");
    }
    const AttrSpec* spec = schema.FindAttr(attr.name());
    if (spec == nullptr) {
      at.Fail(ErrorCode::kInvalidArgument, "", "op type ", op.type(), " has no attribute \"",
              attr.name(), "\"");
    }
    if (attr.value_case() == proto::Attr::VALUE_NOT_SET) {
      at.Fail(ErrorCode::kInvalidArgument, "", "attribute ", attr.name(), " has no value");
    }
    const AttrType given = AttrTypeOf(attr);
    const bool int_for_float = spec->type == AttrType::kFloat && given == AttrType::kInt;
    if (given != spec->type && !int_for_float) {
      at.Fail(ErrorCode::kInvalidArgument, "", "attribute ", attr.name(), " must be a ",
              AttrTypeName(spec->type), ", is a ", AttrTypeName(given));
    }
    if (spec->check) {
      std::string why = spec->check(attr);
      if (!why.empty()) at.Fail(ErrorCode::kOutOfRange, "", "attribute ", attr.name(), " ", why);
    }
    std::vector<int> subs;
    if (given == AttrType::kBlock) subs.push_back(attr.block());
    if (given == AttrType::kBlocks)
      subs.assign(attr.blocks().values().begin(), attr.blocks().values().end());
    for (const int sub : subs) {
      if (sub < 0 || sub >= program.blocks_size()) {
        at.Fail(ErrorCode::kOutOfRange, "", "attribute ", attr.name(), " names block ", sub,
                ", which does not exist (the program has ", program.blocks_size(), ")");
      }
      if (IsAncestorOrSelf(program, sub, b)) {
        at.Fail(ErrorCode::kInvalidArgument, "", "attribute ", attr.name(), " names block ", sub,
                ", which is this block or one of its ancestors: a cycle through sub-blocks");
      }
      // A gradient block's parent is its forward block (so it sees the forward
      // values), itself a sub-block of this block.
      const int parent = program.blocks(sub).parent_idx();
      const bool child_of_child =
          parent >= 0 && parent < program.blocks_size() && program.blocks(parent).parent_idx() == b;
      if (parent != b && !child_of_child) {
        at.Fail(ErrorCode::kInvalidArgument, "", "attribute ", attr.name(), " names block ", sub,
                ", whose parent is block ", parent, ", not block ", b, " or one of its sub-blocks");
      }
    }
  }
  for (const auto& spec : schema.attrs()) {
    if (!spec.default_value && !seen.count(spec.name)) {
      at.Fail(ErrorCode::kInvalidArgument, "", "required attribute \"", spec.name, "\" (",
              AttrTypeName(spec.type), ") is missing");
    }
  }
}

void CollectVisibleVars(const VarIndex& visible, VarInfoMap* vars) {
  for (const auto& [name, desc] : visible.all()) {
    (*vars)[name] = VarInfo{VarShape(*desc), FromProto(desc->dtype())};
  }
}

void CheckBlockOps(const proto::ProgramDesc& program, int b) {
  const auto& block = program.blocks(b);
  Location at(b);
  const VarIndex visible(program, b);
  VarInfoMap vars;
  vars.reserve(visible.all().size());
  CollectVisibleVars(visible, &vars);
  for (int i = 0; i < block.ops_size(); ++i) {
    const auto& op = block.ops(i);
    at.SetOp(i, op.type());
    const OpSchema* schema = FindOpSchema(op.type());
    if (schema == nullptr) at.Fail(ErrorCode::kNotFound, "", "unknown op type \"", op.type(), "\"");
    CheckSlots(visible, b, op, op.inputs(), schema->inputs(), "input", at);
    CheckSlots(visible, b, op, op.outputs(), schema->outputs(), "output", at);
    CheckAttrs(program, b, op, *schema, at);
    if (!schema->infer_shape()) continue;
    // Outputs go to their own map: an op that writes its input must see the old value.
    VarInfoMap inferred;
    try {
      ShapeContext ctx(op, *schema, &vars, &inferred);
      schema->infer_shape()(ctx);
    } catch (const Error& e) {
      std::string var =
          op.inputs_size() > 0 && op.inputs(0).vars_size() > 0 ? op.inputs(0).vars(0) : "";
      at.Fail(e.code(), var, "shape inference: ", e.message());
    }
    for (const auto& slot : op.outputs()) {
      for (const auto& name : slot.vars()) {
        auto found = inferred.find(name);
        if (found == inferred.end()) continue;  // not stated: the declaration stands
        const VarInfo out = found->second;
        const proto::VarDesc* declared = visible.Find(name);
        const Shape declared_shape = VarShape(*declared);
        if (!ShapesCompatible(declared_shape, out.shape)) {
          at.Fail(ErrorCode::kInvalidArgument, name, "shape mismatch: output ", slot.name(),
                  " is inferred as ", ShapeToString(out.shape), " but declared ",
                  ShapeToString(declared_shape));
        }
        if (FromProto(declared->dtype()) != out.dtype) {
          at.Fail(ErrorCode::kInvalidArgument, name, "type mismatch: output ", slot.name(),
                  " is inferred as ", DataTypeName(out.dtype), " but declared ",
                  DataTypeName(FromProto(declared->dtype())));
        }
        vars[name] = out;
      }
    }
  }
}

}  // namespace

void Validate(const proto::ProgramDesc& program) {
  CheckBlocks(program);
  for (int b = 0; b < program.blocks_size(); ++b) CheckBlockOps(program, b);
}

void InferOpShapes(const proto::OpDesc& op, VarInfoMap* vars) {
  const OpSchema& schema = GetOpSchema(op.type());
  if (!schema.infer_shape()) return;
  ShapeContext ctx(op, schema, vars);
  schema.infer_shape()(ctx);
}

}  // namespace rill
