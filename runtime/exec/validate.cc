#include "rill/validate.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "rill/op_desc.h"
#include "rill/op_registry.h"

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
    std::unordered_set<std::string_view> names;
    names.reserve(static_cast<size_t>(block.vars_size()));
    for (const auto& var : block.vars()) {
      if (var.name().empty())
        at.Fail(ErrorCode::kInvalidArgument, "", "a variable has an empty name");
      if (!names.insert(var.name()).second) {
        at.Fail(ErrorCode::kInvalidArgument, var.name(), "declared twice");
      }
      if (var.kind() != proto::DENSE_TENSOR && var.kind() != proto::SELECTED_ROWS &&
          var.kind() != proto::CHANNEL && var.kind() != proto::READER &&
          var.kind() != proto::STEP_SCOPES) {
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

// The declarations and shapes a block sees while validation walks the block
// tree depth first: a stack of declarations per name (the nearest on top) and
// the known shapes, each change undone when its block is left. Entering and
// leaving a block costs its own declarations, so the walk is linear at any
// nesting depth (a VarIndex per block costs the depth of the block).
class VisibleVars {
 public:
  const proto::VarDesc* Find(const std::string& name) const {
    auto it = declared_.find(name);
    return it == declared_.end() ? nullptr : it->second;
  }
  const VarInfoMap& known() const { return known_; }
  void Reserve(size_t names) {
    declared_.reserve(names);
    known_.reserve(names);
  }

  // Declares the block's variables; Leave takes them back.
  void Enter(const proto::BlockDesc& block) {
    marks_.push_back(undo_.size());
    for (const auto& var : block.vars()) {
      const proto::VarDesc*& visible = declared_[var.name()];
      shadowed_.push_back(visible);
      visible = &var;
      Set(var.name(), VarInfo{VarShape(var), FromProto(var.dtype())});
    }
  }
  void Leave(const proto::BlockDesc& block) {
    UndoTo(marks_.back());
    marks_.pop_back();
    for (int i = block.vars_size() - 1; i >= 0; --i) {
      declared_[block.vars(i).name()] = shadowed_.back();
      shadowed_.pop_back();
    }
  }

  // Sets what later ops of the block see of `name` (a proto string, which
  // outlives this), until UndoTo a mark taken before.
  void Set(const std::string& name, VarInfo info) {
    auto [it, added] = known_.try_emplace(name);
    undo_.push_back({name, added ? std::nullopt : std::optional(std::move(it->second))});
    it->second = std::move(info);
  }
  // Sub-blocks see the declared shapes, not what their parent's ops inferred.
  size_t Mark() const { return undo_.size(); }
  void UndoTo(size_t mark) {
    for (; undo_.size() > mark; undo_.pop_back()) {
      auto& [name, old] = undo_.back();
      auto it = known_.find(std::string(name));  // short names: no allocation
      if (old) {
        it->second = std::move(*old);
      } else {
        known_.erase(it);
      }
    }
  }

 private:
  // Names are the program's strings: the walk allocates no name.
  std::unordered_map<std::string_view, const proto::VarDesc*> declared_;
  std::vector<const proto::VarDesc*> shadowed_;  // what each declaration hid
  VarInfoMap known_;
  std::vector<std::pair<std::string_view, std::optional<VarInfo>>> undo_;
  std::vector<size_t> marks_;
};

// Where the walk is: the blocks on the path from the root (the ancestors of
// the block being checked, and itself) and how deep ops nest each sub-block.
struct WalkState {
  std::vector<bool> on_path;
  std::vector<int> nesting;  // sub-blocks an op must run to reach the block
};

// The first element of `items` (an op's slots or attributes) whose name an
// earlier one has, or null. Ops have a handful: compared pairwise, without
// allocating, unless there are many.
template <class Items>
const typename Items::value_type* RepeatedName(const Items& items) {
  const int n = items.size();
  if (n <= 16) {
    for (int i = 1; i < n; ++i) {
      for (int j = 0; j < i; ++j) {
        if (items[j].name() == items[i].name()) return &items[i];
      }
    }
    return nullptr;
  }
  std::unordered_set<std::string_view> seen;
  for (const auto& item : items) {
    if (!seen.insert(item.name()).second) return &item;
  }
  return nullptr;
}

void CheckSlots(const VisibleVars& visible, int b, const proto::OpDesc& op,
                const google::protobuf::RepeatedPtrField<proto::Slot>& given,
                const std::vector<SlotSpec>& specs, const char* direction, const Location& at) {
  if (const proto::Slot* twice = RepeatedName(given)) {
    at.Fail(ErrorCode::kInvalidArgument, "", direction, " slot ", twice->name(), " appears twice");
  }
  for (const auto& slot : given) {
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

void CheckFinite(const proto::Attr& attr, const AttrSpec& spec, const Location& at) {
  if (spec.non_finite_allowed) return;
  auto check = [&](float value, const std::string& which) {
    if (!std::isfinite(value)) {
      at.Fail(ErrorCode::kOutOfRange, "", "attribute ", attr.name(), which, " is ", value,
              ": only finite values are allowed");
    }
  };
  if (attr.value_case() == proto::Attr::kF) check(attr.f(), "");
  if (attr.value_case() == proto::Attr::kFloats) {
    for (int i = 0; i < attr.floats().values_size(); ++i)
      check(attr.floats().values(i), StrCat("[", i, "]"));
  }
}

void CheckSubBlock(const proto::ProgramDesc& program, int b, const proto::Attr& attr, int sub,
                   WalkState& walk, const Location& at) {
  if (sub < 0 || sub >= program.blocks_size()) {
    at.Fail(ErrorCode::kOutOfRange, "", "attribute ", attr.name(), " names block ", sub,
            ", which does not exist (the program has ", program.blocks_size(), ")");
  }
  if (walk.on_path[static_cast<size_t>(sub)]) {
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
  // The sub-block is a descendant, so it is checked after this block.
  int& nesting = walk.nesting[static_cast<size_t>(sub)];
  nesting = std::max(nesting, walk.nesting[static_cast<size_t>(b)] + 1);
  if (nesting > kMaxSubBlockNesting) {
    at.Fail(ErrorCode::kOutOfRange, "", "attribute ", attr.name(), " names block ", sub,
            ", which would run ", nesting, " sub-blocks deep: at most ", kMaxSubBlockNesting,
            " may nest (each level runs on the stack of the one above it)");
  }
}

void CheckAttrs(const proto::ProgramDesc& program, int b, const proto::OpDesc& op,
                const OpSchema& schema, WalkState& walk, const Location& at) {
  if (const proto::Attr* twice = RepeatedName(op.attrs())) {
    at.Fail(ErrorCode::kInvalidArgument, "", "attribute ", twice->name(), " appears twice");
  }
  for (const auto& attr : op.attrs()) {
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
    CheckFinite(attr, *spec, at);  // before the range check: nan compares false either way
    if (spec->check) {
      std::string why = spec->check(attr);
      if (!why.empty()) at.Fail(ErrorCode::kOutOfRange, "", "attribute ", attr.name(), " ", why);
    }
    if (given == AttrType::kBlock) CheckSubBlock(program, b, attr, attr.block(), walk, at);
    if (given == AttrType::kBlocks) {
      for (const int sub : attr.blocks().values()) CheckSubBlock(program, b, attr, sub, walk, at);
    }
  }
  for (const auto& spec : schema.attrs()) {
    if (!spec.default_value && FindAttr(op, spec.name) == nullptr) {
      at.Fail(ErrorCode::kInvalidArgument, "", "required attribute \"", spec.name, "\" (",
              AttrTypeName(spec.type), ") is missing");
    }
  }
}

// Checks the ops of block `b`, whose variables `visible` has entered.
void CheckBlockOps(const proto::ProgramDesc& program, int b, VisibleVars& visible,
                   WalkState& walk) {
  const auto& block = program.blocks(b);
  Location at(b);
  const size_t block_start = visible.Mark();  // what the block's ops infer is undone at its end
  VarInfoMap inferred;
  for (int i = 0; i < block.ops_size(); ++i) {
    const auto& op = block.ops(i);
    at.SetOp(i, op.type());
    const OpSchema* schema = FindOpSchema(op.type());
    if (schema == nullptr) at.Fail(ErrorCode::kNotFound, "", "unknown op type \"", op.type(), "\"");
    CheckSlots(visible, b, op, op.inputs(), schema->inputs(), "input", at);
    CheckSlots(visible, b, op, op.outputs(), schema->outputs(), "output", at);
    CheckAttrs(program, b, op, *schema, walk, at);
    if (!schema->infer_shape()) continue;
    // Outputs go to their own map: an op that writes its input must see the
    // old value. One map for all ops: clear() keeps its buckets.
    inferred.clear();
    try {
      ShapeContext ctx(op, *schema, &visible.known(), &inferred);
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
        visible.Set(name, out);
      }
    }
  }
  visible.UndoTo(block_start);
}

// Visits every block once, parents before children (an explicit stack: blocks
// may nest deeper than the call stack could).
void CheckAllBlockOps(const proto::ProgramDesc& program) {
  const size_t n = static_cast<size_t>(program.blocks_size());
  std::vector<std::vector<int>> children(n);
  for (int b = 1; b < program.blocks_size(); ++b)
    children[static_cast<size_t>(program.blocks(b).parent_idx())].push_back(b);
  VisibleVars visible;
  size_t declarations = 0;
  for (const auto& block : program.blocks()) declarations += static_cast<size_t>(block.vars_size());
  visible.Reserve(declarations);
  WalkState walk{std::vector<bool>(n, false), std::vector<int>(n, 0)};
  struct Frame {
    int block;
    size_t next_child;
  };
  std::vector<Frame> path;
  auto enter = [&](int b) {
    visible.Enter(program.blocks(b));
    walk.on_path[static_cast<size_t>(b)] = true;
    CheckBlockOps(program, b, visible, walk);
    path.push_back({b, 0});
  };
  enter(0);
  while (!path.empty()) {
    Frame& top = path.back();
    const std::vector<int>& kids = children[static_cast<size_t>(top.block)];
    if (top.next_child < kids.size()) {
      enter(kids[top.next_child++]);
      continue;
    }
    if (path.size() == 1) break;  // the root: nothing is checked after it
    visible.Leave(program.blocks(top.block));
    walk.on_path[static_cast<size_t>(top.block)] = false;
    path.pop_back();
  }
}

}  // namespace

void Validate(const proto::ProgramDesc& program) {
  CheckBlocks(program);
  CheckAllBlockOps(program);
}

void InferOpShapes(const proto::OpDesc& op, VarInfoMap* vars) {
  const OpSchema& schema = GetOpSchema(op.type());
  if (!schema.infer_shape()) return;
  ShapeContext ctx(op, schema, vars);
  schema.infer_shape()(ctx);
}

}  // namespace rill
