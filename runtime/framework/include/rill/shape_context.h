// ShapeContext: what an op's shape inference sees at build and validation
// time — the declared shapes and types of its inputs (with -1 for unknown
// dims) — and where it states its outputs'. Errors raised here are reported
// with the block, op index and op type by the caller.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/data_type.h"
#include "rill/error.h"
#include "rill/op_desc.h"
#include "rill/op_schema.h"
#include "rill/proto/program.pb.h"
#include "rill/shape.h"

namespace rill {

struct VarInfo {
  Shape shape;
  DataType dtype = DataType::kFloat32;
};

// What is known of variables, by name.
using VarInfoMap = std::unordered_map<std::string, VarInfo>;

class ShapeContext {
 public:
  // `vars` maps variable names to what is known of them; outputs are written back into it.
  ShapeContext(const proto::OpDesc& op, const OpSchema& schema, VarInfoMap* vars);
  // Inputs are read from `known`, outputs written to `outputs` (which may be `known`).
  ShapeContext(const proto::OpDesc& op, const OpSchema& schema, const VarInfoMap* known,
               VarInfoMap* outputs);

  int InputCount(const std::string& slot) const;
  bool HasInput(const std::string& slot) const { return InputCount(slot) > 0; }
  const Shape& InputShape(const std::string& slot, int i = 0) const;
  DataType InputType(const std::string& slot, int i = 0) const;
  const std::string& InputName(const std::string& slot, int i = 0) const;
  int OutputCount(const std::string& slot) const;
  bool HasOutput(const std::string& slot) const { return OutputCount(slot) > 0; }
  // Declares output i of a slot; a no-op when the op does not bind that output.
  void SetOutput(const std::string& slot, const Shape& shape, DataType dtype, int i = 0);

  // Attribute value, or its schema default. T: bool, int, int64_t, float,
  // std::string, std::vector<int64_t>, std::vector<float>.
  template <class T>
  T Attr(const std::string& name) const;

  // Throws kInvalidArgument with the message parts when cond is false.
  template <class... Args>
  void Check(bool cond, Args&&... args) const {
    if (!cond) Fail(ErrorCode::kInvalidArgument, std::forward<Args>(args)...);
  }
  // Checks two dims agree where both are known (-1 matches anything).
  void CheckDim(int64_t a, int64_t b, const std::string& what) const;

  const proto::OpDesc& op() const { return op_; }

 private:
  const VarInfo& Info(const std::string& slot, int i) const;

  const proto::OpDesc& op_;
  const OpSchema& schema_;
  const VarInfoMap* known_;
  VarInfoMap* outputs_;
};

// Reads an attribute of `op`, falling back to the schema's default; throws
// kInvalidArgument when neither exists or the type differs.
template <class T>
T ReadAttr(const proto::OpDesc& op, const OpSchema& schema, const std::string& name);

template <class T>
T ShapeContext::Attr(const std::string& name) const {
  return ReadAttr<T>(op_, schema_, name);
}

}  // namespace rill
