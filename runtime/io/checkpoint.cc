// Checkpoints: a program's persistable variables to and from checkpoint files
// (the format is checkpoint_file.cc's).
#include "rill/checkpoint.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "rill/op_desc.h"
#include "rill/program_io.h"

namespace rill {
namespace {

// The first declaration of `name` in block order.
const proto::VarDesc* FirstDeclaration(const proto::ProgramDesc& program, const std::string& name,
                                       int* block_index) {
  for (int b = 0; b < program.blocks_size(); ++b) {
    for (const auto& var : program.blocks(b).vars()) {
      if (var.name() == name) {
        *block_index = b;
        return &var;
      }
    }
  }
  return nullptr;
}

void CopyBytes(void* dst, const void* src, int64_t count, size_t size) {
  const size_t total = static_cast<size_t>(count) * size;
  if (total == 0) return;
  std::memcpy(dst, src, total);
  if constexpr (std::endian::native == std::endian::big) {
    auto* bytes = static_cast<unsigned char*>(dst);
    for (int64_t i = 0; i < count; ++i) std::reverse(bytes + i * size, bytes + (i + 1) * size);
  }
}

// Checks a value against its declaration: same type, compatible shape.
void CheckAgainstDeclaration(const proto::VarDesc& var, int block, const Shape& shape,
                             DataType dtype, const std::string& what) {
  if (!proto::DataType_IsValid(var.dtype()) || var.dtype() == proto::DT_INVALID) {
    Fail(ErrorCode::kInvalidArgument, "variable \"", var.name(), "\" (block ", block,
         ") is declared with invalid data type ", static_cast<int>(var.dtype()));
  }
  const DataType declared = FromProto(var.dtype());
  if (declared != dtype) {
    Fail(ErrorCode::kInvalidArgument, what, "variable \"", var.name(), "\" is ",
         DataTypeName(dtype), ShapeToString(shape), " but block ", block, " declares it ",
         DataTypeName(declared), ShapeToString(VarShape(var)));
  }
  if (!ShapesCompatible(VarShape(var), shape)) {
    Fail(ErrorCode::kInvalidArgument, what, "variable \"", var.name(), "\" has shape ",
         ShapeToString(shape), " but block ", block, " declares it ", DataTypeName(declared),
         ShapeToString(VarShape(var)));
  }
}

// Name -> index of each tensor of a set; duplicates are an error.
std::map<std::string, int> IndexByName(const proto::TensorSet& set, const std::string& path) {
  std::map<std::string, int> index;
  for (int i = 0; i < set.tensors_size(); ++i) {
    if (!index.emplace(set.tensors(i).name(), i).second) {
      Fail(ErrorCode::kParse, path, ": variable \"", set.tensors(i).name(),
           "\" is saved twice in the checkpoint");
    }
  }
  return index;
}

void Store(Scope* scope, const std::string& name, Tensor value) {
  Variable* var = scope->FindVar(name);
  if (var == nullptr) var = scope->Var(name);
  *var->mutable_tensor() = std::move(value);
}

}  // namespace

std::vector<std::string> PersistableVarNames(const proto::ProgramDesc& program) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& block : program.blocks()) {
    for (const auto& var : block.vars()) {
      // Readers and channels hold objects, not tensors: nothing to save.
      const bool tensor = var.kind() == proto::DENSE_TENSOR || var.kind() == proto::SELECTED_ROWS;
      if (var.persistable() && tensor && seen.insert(var.name()).second)
        names.push_back(var.name());
    }
  }
  return names;
}

proto::TensorProto TensorToProto(const std::string& name, const Tensor& given) {
  RILL_CHECK(given.initialized(), kInvalidArgument, "variable \"", name, "\" holds no value");
  // A device's values (parameters trained on cuda:0) are saved from a host copy.
  const Tensor tensor = given.place().host_memory() ? given : given.CopyTo(Place::Cpu());
  proto::TensorProto out;
  out.set_name(name);
  out.set_dtype(ToProto(tensor.dtype()));
  for (int64_t d : tensor.shape()) out.add_shape(d);
  std::string* data = out.mutable_data();
  data->resize(tensor.bytes());
  CopyBytes(data->data(), tensor.raw_data(), tensor.numel(), SizeOf(tensor.dtype()));
  return out;
}

Tensor TensorFromProto(const proto::TensorProto& proto, const std::string& source) {
  const std::string where =
      StrCat(source.empty() ? "" : source + ": ", "saved variable \"", proto.name(), "\"");
  if (proto.dtype() == proto::DT_INVALID || !proto::DataType_IsValid(proto.dtype())) {
    Fail(ErrorCode::kParse, where, " has invalid data type ", static_cast<int>(proto.dtype()));
  }
  const DataType dtype = FromProto(proto.dtype());
  const Shape shape(proto.shape().begin(), proto.shape().end());
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0)
      Fail(ErrorCode::kParse, where, " has negative dimension in shape ", ShapeToString(shape));
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / d) {
      Fail(ErrorCode::kParse, where, " has a shape too large: ", ShapeToString(shape));
    }
    numel *= d;
  }
  const size_t item = SizeOf(dtype);
  if (static_cast<uint64_t>(numel) > proto.data().size() / item ||
      static_cast<size_t>(numel) * item != proto.data().size()) {
    Fail(ErrorCode::kParse, where, " is ", DataTypeName(dtype), ShapeToString(shape), " but holds ",
         proto.data().size(), " bytes of data");
  }
  Tensor tensor(dtype, shape);
  CopyBytes(tensor.raw_data(), proto.data().data(), numel, item);
  return tensor;
}

void SaveCheckpoint(const proto::ProgramDesc& program, const Scope& scope, const std::string& path,
                    int64_t step) {
  proto::TensorSet set;
  for (const std::string& name : PersistableVarNames(program)) {
    const Variable* var = scope.FindVar(name);
    if (var == nullptr || !var->tensor().initialized()) continue;
    const Tensor& value = var->tensor();
    int block = 0;
    const proto::VarDesc* desc = FirstDeclaration(program, name, &block);
    CheckAgainstDeclaration(*desc, block, value.shape(), value.dtype(),
                            StrCat("cannot save checkpoint ", path, ": "));
    *set.add_tensors() = TensorToProto(name, value);
  }
  WriteCheckpointFile(path, set, step);
}

proto::TensorSet ReadTensorSet(const std::string& path) { return ReadCheckpointFile(path).tensors; }

CheckpointValues ReadCheckpoint(const proto::ProgramDesc& program, const std::string& path) {
  const CheckpointFile file = ReadCheckpointFile(path);
  const std::map<std::string, int> index = IndexByName(file.tensors, path);
  CheckpointValues result;
  result.step = file.step;
  for (const std::string& name : PersistableVarNames(program)) {
    int block = 0;
    const proto::VarDesc* desc = FirstDeclaration(program, name, &block);
    auto it = index.find(name);
    if (it == index.end()) {
      Fail(ErrorCode::kNotFound, path, ": the checkpoint has no variable \"", name,
           "\" (declared persistable in block ", block, ")");
    }
    Tensor value = TensorFromProto(file.tensors.tensors(it->second), path);
    CheckAgainstDeclaration(*desc, block, value.shape(), value.dtype(), StrCat(path, ": saved "));
    result.values.emplace_back(name, std::move(value));
  }
  return result;
}

int64_t LoadCheckpoint(const proto::ProgramDesc& program, Scope* scope, const std::string& path) {
  CheckpointValues checkpoint = ReadCheckpoint(program, path);
  for (auto& [name, value] : checkpoint.values) Store(scope, name, std::move(value));
  return checkpoint.step;
}

std::vector<std::string> LoadCheckpoint(Scope* scope, const std::string& path) {
  const proto::TensorSet set = ReadTensorSet(path);
  IndexByName(set, path);
  std::vector<std::pair<std::string, Tensor>> loaded;
  for (const auto& tensor : set.tensors()) {
    loaded.emplace_back(tensor.name(), TensorFromProto(tensor, path));
  }
  std::vector<std::string> names;
  for (auto& [name, value] : loaded) {
    names.push_back(name);
    Store(scope, name, std::move(value));
  }
  return names;
}

}  // namespace rill
