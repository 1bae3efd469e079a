#include "rill/shape_context.h"

namespace rill {

template <class T>
T ReadAttr(const proto::OpDesc& op, const OpSchema& schema, const std::string& name) {
  const proto::Attr* attr = FindAttr(op, name);
  if (attr == nullptr) {
    const AttrSpec* spec = schema.FindAttr(name);
    RILL_CHECK(spec != nullptr && spec->default_value, kInvalidArgument, "op ", op.type(),
               " has no attribute \"", name, "\" and no default for it");
    attr = &*spec->default_value;
  }
  if constexpr (std::is_same_v<T, int>) {
    return static_cast<int>(AttrValue<int64_t>(*attr));
  } else if constexpr (std::is_same_v<T, double>) {
    return static_cast<double>(AttrValue<float>(*attr));
  } else {
    return AttrValue<T>(*attr);
  }
}

template bool ReadAttr<bool>(const proto::OpDesc&, const OpSchema&, const std::string&);
template int ReadAttr<int>(const proto::OpDesc&, const OpSchema&, const std::string&);
template int64_t ReadAttr<int64_t>(const proto::OpDesc&, const OpSchema&, const std::string&);
template float ReadAttr<float>(const proto::OpDesc&, const OpSchema&, const std::string&);
template double ReadAttr<double>(const proto::OpDesc&, const OpSchema&, const std::string&);
template std::string ReadAttr<std::string>(const proto::OpDesc&, const OpSchema&,
                                           const std::string&);
template std::vector<int64_t> ReadAttr<std::vector<int64_t>>(const proto::OpDesc&, const OpSchema&,
                                                             const std::string&);
template std::vector<float> ReadAttr<std::vector<float>>(const proto::OpDesc&, const OpSchema&,
                                                         const std::string&);
template std::vector<std::string> ReadAttr<std::vector<std::string>>(const proto::OpDesc&,
                                                                     const OpSchema&,
                                                                     const std::string&);

ShapeContext::ShapeContext(const proto::OpDesc& op, const OpSchema& schema, VarInfoMap* vars)
    : ShapeContext(op, schema, vars, vars) {}

ShapeContext::ShapeContext(const proto::OpDesc& op, const OpSchema& schema, const VarInfoMap* known,
                           VarInfoMap* outputs)
    : op_(op), schema_(schema), known_(known), outputs_(outputs) {}

// The slot named `slot`, or nullptr. Ops have a handful of slots: a linear
// search beats building a map for every op validated.
static const proto::Slot* FindSlot(const google::protobuf::RepeatedPtrField<proto::Slot>& slots,
                                   const std::string& slot) {
  for (const auto& s : slots) {
    if (s.name() == slot) return &s;
  }
  return nullptr;
}

int ShapeContext::InputCount(const std::string& slot) const {
  const proto::Slot* s = FindSlot(op_.inputs(), slot);
  return s == nullptr ? 0 : s->vars_size();
}

int ShapeContext::OutputCount(const std::string& slot) const {
  const proto::Slot* s = FindSlot(op_.outputs(), slot);
  return s == nullptr ? 0 : s->vars_size();
}

const std::string& ShapeContext::InputName(const std::string& slot, int i) const {
  const proto::Slot* s = FindSlot(op_.inputs(), slot);
  RILL_CHECK(s != nullptr && i >= 0 && i < s->vars_size(), kInvalidArgument, "input slot ", slot,
             " has no variable #", i);
  return s->vars(i);
}

const VarInfo& ShapeContext::Info(const std::string& slot, int i) const {
  const std::string& name = InputName(slot, i);
  auto it = known_->find(name);
  RILL_CHECK(it != known_->end(), kInvalidArgument, "input ", slot, " names variable \"", name,
             "\", whose shape is unknown");
  return it->second;
}

const Shape& ShapeContext::InputShape(const std::string& slot, int i) const {
  return Info(slot, i).shape;
}

DataType ShapeContext::InputType(const std::string& slot, int i) const {
  return Info(slot, i).dtype;
}

void ShapeContext::SetOutput(const std::string& slot, const Shape& shape, DataType dtype, int i) {
  const proto::Slot* s = FindSlot(op_.outputs(), slot);
  if (s == nullptr || i >= s->vars_size()) return;
  (*outputs_)[s->vars(i)] = VarInfo{shape, dtype};
}

void ShapeContext::CheckDim(int64_t a, int64_t b, const std::string& what) const {
  Check(a == b || a < 0 || b < 0, what, ": ", a, " vs ", b);
}

}  // namespace rill
