// Checkpoints: the persistable variables of a program (parameters, optimizer
// state, counters) saved from a scope into one file, with the step they are
// at, and restored bit-exactly. The file format (a version, a checksum) is in
// rill/checkpoint_file.h.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rill/checkpoint_file.h"
#include "rill/proto/program.pb.h"
#include "rill/scope.h"
#include "rill/tensor.h"

namespace rill {

// The names of the variables declared persistable in any block of `program`,
// each once, in declaration order.
std::vector<std::string> PersistableVarNames(const proto::ProgramDesc& program);

// Writes every persistable variable of `program` that holds a value in
// `scope` to `path`, with `step` (the training step they are at; kNoStep for
// none), atomically: a temporary file renamed into place, so a failed write
// leaves the old file intact. Throws rill::Error naming the variable when a
// value's type or shape differs from the program's declaration, and kIo naming
// the path when writing fails.
void SaveCheckpoint(const proto::ProgramDesc& program, const Scope& scope, const std::string& path,
                    int64_t step = kNoStep);

// What a checkpoint holds for a program: the step and the value of every
// persistable variable, in declaration order.
struct CheckpointValues {
  int64_t step = kNoStep;
  std::vector<std::pair<std::string, Tensor>> values;
};

// Reads `path` and checks it against `program` without touching a scope: the
// file's format, version and checksum (rill/checkpoint_file.h), then every
// persistable variable present with its declared type and shape (-1 dims
// match any size). Throws rill::Error whose message starts with the path and
// names what failed: kIo when the file cannot be read, kParse when it fails a
// format check, kNotFound/kInvalidArgument naming the variable. Tensors in the
// file that the program does not declare persistable are ignored.
CheckpointValues ReadCheckpoint(const proto::ProgramDesc& program, const std::string& path);

// Restores every persistable variable of `program` from `path` into `scope`
// (creating the variables in `scope` where absent) and returns the saved step
// (kNoStep when none was saved). All-or-nothing: the file is read and checked
// as ReadCheckpoint does before any variable is written.
int64_t LoadCheckpoint(const proto::ProgramDesc& program, Scope* scope, const std::string& path);

// Restores every tensor of the file at `path` into `scope` by name, without a
// program to check against. Returns the names restored, in file order.
std::vector<std::string> LoadCheckpoint(Scope* scope, const std::string& path);

// Reads the tensors of a checkpoint file (format checked). Throws kIo/kParse
// naming the path.
proto::TensorSet ReadTensorSet(const std::string& path);

// One tensor as a TensorProto (little-endian, row-major bytes). The tensor must hold a value.
proto::TensorProto TensorToProto(const std::string& name, const Tensor& tensor);
// The tensor a TensorProto holds. Throws kParse naming the tensor (and
// `source`, when given) when its dtype is invalid, a dimension is negative or
// the byte count does not match the shape.
Tensor TensorFromProto(const proto::TensorProto& proto, const std::string& source = "");

}  // namespace rill
