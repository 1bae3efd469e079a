#include "runtime/shape_context.h"

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
template std::string ReadAttr<std::string>(const proto::OpDesc&, const OpSchema&, const std::string&);
template std::vector<int64_t> ReadAttr<std::vector<int64_t>>(const proto::OpDesc&, const OpSchema&,
                                                             const std::string&);
template std::vector<float> ReadAttr<std::vector<float>>(const proto::OpDesc&, const OpSchema&,
                                                         const std::string&);
template std::vector<std::string> ReadAttr<std::vector<std::string>>(const proto::OpDesc&,
                                                                     const OpSchema&,
                                                                     const std::string&);

ShapeContext::ShapeContext(const proto::OpDesc& op, const OpSchema& schema,
                           VarInfoMap* vars)
    : ShapeContext(op, schema, vars, vars) {}

ShapeContext::ShapeContext(const proto::OpDesc& op, const OpSchema& schema,
                           const VarInfoMap* known,
                           VarInfoMap* outputs)
    : op_(op), schema_(schema), known_(known), outputs_(outputs) {
  for (const auto& s : op.inputs()) input_names_[s.name()] = {s.vars().begin(), s.vars().end()};
  for (const auto& s : op.outputs()) output_names_[s.name()] = {s.vars().begin(), s.vars().end()};
}

static const std::vector<std::string>& Lookup(
    const std::map<std::string, std::vector<std::string>>& names, const std::string& slot) {
  auto it = names.find(slot);
  return it == names.end() ? NoNames() : it->second;
}

int ShapeContext::InputCount(const std::string& slot) const {
  return static_cast<int>(Lookup(input_names_, slot).size());
}

int ShapeContext::OutputCount(const std::string& slot) const {
  return static_cast<int>(Lookup(output_names_, slot).size());
}

const std::string& ShapeContext::InputName(const std::string& slot, int i) const {
  const auto& names = Lookup(input_names_, slot);
  RILL_CHECK(i >= 0 && i < static_cast<int>(names.size()), kInvalidArgument, "input slot ", slot,
             " has no variable #", i);
  return names[i];
}

const VarInfo& ShapeContext::Info(const std::string& slot, int i) const {
  const std::string& name = InputName(slot, i);
  auto it = known_->find(name);
  RILL_CHECK(it != known_->end(), kInvalidArgument, "input ", slot, " names variable \"", name,
             "\", whose shape is unknown");
  return it->second;
}

const Shape& ShapeContext::InputShape(const std::string& slot, int i) const { return Info(slot, i).shape; }

DataType ShapeContext::InputType(const std::string& slot, int i) const { return Info(slot, i).dtype; }

void ShapeContext::SetOutput(const std::string& slot, const Shape& shape, DataType dtype, int i) {
  const auto& names = Lookup(output_names_, slot);
  if (i >= static_cast<int>(names.size())) return;
  (*outputs_)[names[i]] = VarInfo{shape, dtype};
}

void ShapeContext::CheckDim(int64_t a, int64_t b, const std::string& what) const {
  Check(a == b || a < 0 || b < 0, what, ": ", a, " vs ", b);
}

}  // namespace rill
