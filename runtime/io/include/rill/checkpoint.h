// Checkpoints: the persistable variables of a program (parameters, optimizer
// state, counters) saved from a scope into one file, a serialized
// proto::TensorSet, and restored bit-exactly.
#pragma once

#include <string>
#include <vector>

#include "rill/proto/program.pb.h"
#include "rill/scope.h"
#include "rill/tensor.h"

namespace rill {

// The names of the variables declared persistable in any block of `program`,
// each once, in declaration order.
std::vector<std::string> PersistableVarNames(const proto::ProgramDesc& program);

// Writes every persistable variable of `program` that holds a value in
// `scope` to `path`, atomically (a temporary file renamed into place).
// Throws rill::Error naming the variable when a value's type or shape differs
// from the program's declaration, and kIo naming the path when writing fails.
void SaveCheckpoint(const proto::ProgramDesc& program, const Scope& scope, const std::string& path);

// Restores every persistable variable of `program` from `path` into `scope`
// (creating the variables in `scope` where absent). All-or-nothing: every
// tensor is checked before any variable is written. Throws rill::Error naming
// the variable and the file when a persistable variable is missing from the
// file or its saved type or shape differs from the declaration (-1 dims
// match any size); kIo/kParse naming the path when the file cannot be read or
// parsed. Tensors in the file that the program does not declare persistable
// are ignored.
void LoadCheckpoint(const proto::ProgramDesc& program, Scope* scope, const std::string& path);

// Restores every tensor of the file at `path` into `scope` by name, without a
// program to check against. Returns the names restored, in file order.
std::vector<std::string> LoadCheckpoint(Scope* scope, const std::string& path);

// Reads the tensors of a checkpoint file. Throws kIo/kParse naming the path.
proto::TensorSet ReadTensorSet(const std::string& path);

// One tensor as a TensorProto (little-endian, row-major bytes). The tensor must hold a value.
proto::TensorProto TensorToProto(const std::string& name, const Tensor& tensor);
// The tensor a TensorProto holds. Throws kParse naming the tensor (and
// `source`, when given) when its dtype is invalid, a dimension is negative or
// the byte count does not match the shape.
Tensor TensorFromProto(const proto::TensorProto& proto, const std::string& source = "");

}  // namespace rill
