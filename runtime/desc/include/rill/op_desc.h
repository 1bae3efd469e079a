// Helpers to read and write proto::OpDesc and proto::BlockDesc: slot lists,
// typed attributes, variable lookup through parent blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/data_type.h"
#include "rill/proto/program.pb.h"
#include "rill/shape.h"

namespace rill {

// The variable names of a slot; empty when the op has no such slot.
const std::vector<std::string>& NoNames();
std::vector<std::string> SlotVars(const google::protobuf::RepeatedPtrField<proto::Slot>& slots,
                                  const std::string& slot);
std::vector<std::string> InputVars(const proto::OpDesc& op, const std::string& slot);
std::vector<std::string> OutputVars(const proto::OpDesc& op, const std::string& slot);
// The single variable of a slot; throws kInvalidArgument if it does not hold exactly one.
std::string InputVar(const proto::OpDesc& op, const std::string& slot);
std::string OutputVar(const proto::OpDesc& op, const std::string& slot);
// Replaces (or adds) a slot's variable list.
void SetInput(proto::OpDesc* op, const std::string& slot, const std::vector<std::string>& vars);
void SetOutput(proto::OpDesc* op, const std::string& slot, const std::vector<std::string>& vars);

// Attributes. Find returns nullptr when absent.
const proto::Attr* FindAttr(const proto::OpDesc& op, const std::string& name);
proto::Attr* MutableAttr(proto::OpDesc* op, const std::string& name);  // adds if absent
void SetAttr(proto::OpDesc* op, const std::string& name, bool value);
void SetAttr(proto::OpDesc* op, const std::string& name, int value);
void SetAttr(proto::OpDesc* op, const std::string& name, int64_t value);
void SetAttr(proto::OpDesc* op, const std::string& name, float value);
void SetAttr(proto::OpDesc* op, const std::string& name, double value);
void SetAttr(proto::OpDesc* op, const std::string& name, const char* value);
void SetAttr(proto::OpDesc* op, const std::string& name, const std::string& value);
void SetAttr(proto::OpDesc* op, const std::string& name, const std::vector<int64_t>& value);
void SetAttr(proto::OpDesc* op, const std::string& name, const std::vector<float>& value);
void SetAttr(proto::OpDesc* op, const std::string& name, const std::vector<std::string>& value);
void SetBlockAttr(proto::OpDesc* op, const std::string& name, int block_index);

// Typed reads of a present attribute; throw kInvalidArgument on a type mismatch.
// T is one of bool, int64_t, float, std::string, std::vector<int64_t>,
// std::vector<float>, std::vector<std::string>.
template <class T>
T AttrValue(const proto::Attr& attr);
// The blocks a block (or block list) attribute names; throws kInvalidArgument
// naming the op when it is absent or holds something else.
std::vector<int> BlockAttrs(const proto::OpDesc& op, const std::string& name);
// The one block a block attribute names.
int BlockAttr(const proto::OpDesc& op, const std::string& name);
// "int", "float", ... for messages.
const char* AttrCaseName(proto::Attr::ValueCase value_case);

// Looks up a variable declaration in block `block_index` or its ancestors.
const proto::VarDesc* FindVarDesc(const proto::ProgramDesc& program, int block_index,
                                  const std::string& name);
proto::VarDesc* FindLocalVarDesc(proto::BlockDesc* block, const std::string& name);
Shape VarShape(const proto::VarDesc& var);

// Gradient naming: "w" -> "w@GRAD".
inline constexpr const char* kGradSuffix = "@GRAD";
std::string GradVarName(const std::string& name);

}  // namespace rill
