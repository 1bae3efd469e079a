#include "actors/distributed/pserver_checkpoint.h"

#include <sys/stat.h>

#include "rill/checkpoint.h"
#include "rill/error.h"
#include "rill/program_io.h"
#include "rill/scope.h"

namespace rill {
namespace {
constexpr const char* kStepName = "@step";
}

void SavePserverCheckpoint(const proto::ProgramDesc& program, const Scope& scope, int64_t step,
                           const std::string& path) {
  proto::TensorSet set;
  for (const std::string& name : PersistableVarNames(program)) {
    const Variable* var = scope.FindVar(name);
    if (var == nullptr || !var->tensor().initialized()) continue;
    *set.add_tensors() = TensorToProto(name, var->tensor());
  }
  Tensor step_tensor(DataType::kInt64, {1});
  step_tensor.mutable_data<int64_t>()[0] = step;
  *set.add_tensors() = TensorToProto(kStepName, step_tensor);
  WriteFileAtomically(path, set.SerializeAsString());
}

bool PserverCheckpointExists(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

int64_t LoadPserverCheckpoint(const proto::ProgramDesc& program, Scope* scope,
                              const std::string& path) {
  const proto::TensorSet set = ReadTensorSet(path);
  int64_t step = -1;
  for (const auto& tensor : set.tensors()) {
    if (tensor.name() != kStepName) continue;
    const Tensor value = TensorFromProto(tensor, path);
    RILL_CHECK(value.numel() == 1 && value.dtype() == DataType::kInt64, kParse, path,
               ": \"@step\" must be one int64");
    step = value.data<int64_t>()[0];
  }
  RILL_CHECK(step >= 0, kParse, path, ": not a parameter-server checkpoint (no \"@step\")");
  LoadCheckpoint(program, scope, path);
  return step;
}

}  // namespace rill
