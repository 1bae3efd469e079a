#include "rill/op_desc.h"

#include "rill/error.h"

namespace rill {

const std::vector<std::string>& NoNames() {
  static const std::vector<std::string> kEmpty;
  return kEmpty;
}

std::vector<std::string> SlotVars(const google::protobuf::RepeatedPtrField<proto::Slot>& slots,
                                  const std::string& slot) {
  for (const auto& s : slots) {
    if (s.name() == slot) return {s.vars().begin(), s.vars().end()};
  }
  return {};
}

std::vector<std::string> InputVars(const proto::OpDesc& op, const std::string& slot) {
  return SlotVars(op.inputs(), slot);
}

std::vector<std::string> OutputVars(const proto::OpDesc& op, const std::string& slot) {
  return SlotVars(op.outputs(), slot);
}

static std::string SingleVar(const proto::OpDesc& op, const std::string& slot,
                             const std::vector<std::string>& vars, const char* direction) {
  RILL_CHECK(vars.size() == 1, kInvalidArgument, "op ", op.type(), ": ", direction, " slot ", slot,
             " must hold exactly one variable, holds ", vars.size());
  return vars[0];
}

std::string InputVar(const proto::OpDesc& op, const std::string& slot) {
  return SingleVar(op, slot, InputVars(op, slot), "input");
}

std::string OutputVar(const proto::OpDesc& op, const std::string& slot) {
  return SingleVar(op, slot, OutputVars(op, slot), "output");
}

static void SetSlot(google::protobuf::RepeatedPtrField<proto::Slot>* slots, const std::string& slot,
                    const std::vector<std::string>& vars) {
  proto::Slot* target = nullptr;
  for (auto& s : *slots) {
    if (s.name() == slot) target = &s;
  }
  if (target == nullptr) {
    target = slots->Add();
    target->set_name(slot);
  }
  target->clear_vars();
  for (const auto& v : vars) target->add_vars(v);
}

void SetInput(proto::OpDesc* op, const std::string& slot, const std::vector<std::string>& vars) {
  SetSlot(op->mutable_inputs(), slot, vars);
}

void SetOutput(proto::OpDesc* op, const std::string& slot, const std::vector<std::string>& vars) {
  SetSlot(op->mutable_outputs(), slot, vars);
}

const proto::Attr* FindAttr(const proto::OpDesc& op, const std::string& name) {
  for (const auto& a : op.attrs()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

proto::Attr* MutableAttr(proto::OpDesc* op, const std::string& name) {
  for (auto& a : *op->mutable_attrs()) {
    if (a.name() == name) return &a;
  }
  proto::Attr* a = op->add_attrs();
  a->set_name(name);
  return a;
}

void SetAttr(proto::OpDesc* op, const std::string& name, bool value) {
  MutableAttr(op, name)->set_b(value);
}
void SetAttr(proto::OpDesc* op, const std::string& name, int value) {
  MutableAttr(op, name)->set_i(value);
}
void SetAttr(proto::OpDesc* op, const std::string& name, int64_t value) {
  MutableAttr(op, name)->set_i(value);
}
void SetAttr(proto::OpDesc* op, const std::string& name, float value) {
  MutableAttr(op, name)->set_f(value);
}
void SetAttr(proto::OpDesc* op, const std::string& name, double value) {
  MutableAttr(op, name)->set_f(static_cast<float>(value));
}
void SetAttr(proto::OpDesc* op, const std::string& name, const char* value) {
  MutableAttr(op, name)->set_s(value);
}
void SetAttr(proto::OpDesc* op, const std::string& name, const std::string& value) {
  MutableAttr(op, name)->set_s(value);
}
void SetAttr(proto::OpDesc* op, const std::string& name, const std::vector<int64_t>& value) {
  auto* list = MutableAttr(op, name)->mutable_ints();
  list->clear_values();
  for (auto v : value) list->add_values(v);
}
void SetAttr(proto::OpDesc* op, const std::string& name, const std::vector<float>& value) {
  auto* list = MutableAttr(op, name)->mutable_floats();
  list->clear_values();
  for (auto v : value) list->add_values(v);
}
void SetAttr(proto::OpDesc* op, const std::string& name, const std::vector<std::string>& value) {
  auto* list = MutableAttr(op, name)->mutable_strings();
  list->clear_values();
  for (const auto& v : value) list->add_values(v);
}
void SetBlockAttr(proto::OpDesc* op, const std::string& name, int block_index) {
  MutableAttr(op, name)->set_block(block_index);
}

const char* AttrCaseName(proto::Attr::ValueCase value_case) {
  switch (value_case) {
    case proto::Attr::kB: return "bool";
    case proto::Attr::kI: return "int";
    case proto::Attr::kF: return "float";
    case proto::Attr::kS: return "string";
    case proto::Attr::kInts: return "int list";
    case proto::Attr::kFloats: return "float list";
    case proto::Attr::kStrings: return "string list";
    case proto::Attr::kBlock: return "block";
    case proto::Attr::kBlocks: return "block list";
    case proto::Attr::VALUE_NOT_SET: return "unset";
  }
  return "unknown";
}

static void CheckCase(const proto::Attr& attr, proto::Attr::ValueCase expected) {
  RILL_CHECK(attr.value_case() == expected, kInvalidArgument, "attribute ", attr.name(), " is a ",
             AttrCaseName(attr.value_case()), ", expected a ", AttrCaseName(expected));
}

template <>
bool AttrValue<bool>(const proto::Attr& attr) {
  CheckCase(attr, proto::Attr::kB);
  return attr.b();
}
template <>
int64_t AttrValue<int64_t>(const proto::Attr& attr) {
  CheckCase(attr, proto::Attr::kI);
  return attr.i();
}
template <>
float AttrValue<float>(const proto::Attr& attr) {
  // An int literal where a float is expected is accepted (text files write "f: 1" or "i: 1").
  if (attr.value_case() == proto::Attr::kI) return static_cast<float>(attr.i());
  CheckCase(attr, proto::Attr::kF);
  return attr.f();
}
template <>
std::string AttrValue<std::string>(const proto::Attr& attr) {
  CheckCase(attr, proto::Attr::kS);
  return attr.s();
}
template <>
std::vector<int64_t> AttrValue<std::vector<int64_t>>(const proto::Attr& attr) {
  CheckCase(attr, proto::Attr::kInts);
  return {attr.ints().values().begin(), attr.ints().values().end()};
}
template <>
std::vector<float> AttrValue<std::vector<float>>(const proto::Attr& attr) {
  CheckCase(attr, proto::Attr::kFloats);
  return {attr.floats().values().begin(), attr.floats().values().end()};
}
template <>
std::vector<std::string> AttrValue<std::vector<std::string>>(const proto::Attr& attr) {
  CheckCase(attr, proto::Attr::kStrings);
  return {attr.strings().values().begin(), attr.strings().values().end()};
}

std::vector<int> BlockAttrs(const proto::OpDesc& op, const std::string& name) {
  const proto::Attr* attr = FindAttr(op, name);
  RILL_CHECK(attr != nullptr, kInvalidArgument, "op ", op.type(), " has no attribute ", name);
  if (attr->value_case() == proto::Attr::kBlock) return {attr->block()};
  RILL_CHECK(attr->value_case() == proto::Attr::kBlocks, kInvalidArgument, "attribute ", name,
             " of op ", op.type(), " must name blocks, is a ", AttrCaseName(attr->value_case()));
  return {attr->blocks().values().begin(), attr->blocks().values().end()};
}

int BlockAttr(const proto::OpDesc& op, const std::string& name) {
  const proto::Attr* attr = FindAttr(op, name);
  RILL_CHECK(attr != nullptr && attr->value_case() == proto::Attr::kBlock, kInvalidArgument,
             op.type(), " has no block attribute ", name);
  return attr->block();
}

const proto::VarDesc* FindVarDesc(const proto::ProgramDesc& program, int block_index,
                                  const std::string& name) {
  // Bounded by the block count so a malformed parent chain cannot loop forever.
  for (int hops = 0;
       block_index >= 0 && block_index < program.blocks_size() && hops <= program.blocks_size();
       ++hops) {
    const auto& block = program.blocks(block_index);
    for (const auto& v : block.vars()) {
      if (v.name() == name) return &v;
    }
    block_index = block.parent_idx();
  }
  return nullptr;
}

proto::VarDesc* FindLocalVarDesc(proto::BlockDesc* block, const std::string& name) {
  for (auto& v : *block->mutable_vars()) {
    if (v.name() == name) return &v;
  }
  return nullptr;
}

Shape VarShape(const proto::VarDesc& var) { return {var.shape().begin(), var.shape().end()}; }

std::string GradVarName(const std::string& name) { return name + kGradSuffix; }

}  // namespace rill
