// The process-wide table of op schemas, filled by RILL_REGISTER_OP at static
// initialisation. Lookups are safe from any thread once main() has started.
#pragma once

#include <string>
#include <vector>

#include "rill/op_schema.h"

namespace rill {

// Adds a schema; throws kInvalidArgument if the type is already registered.
bool RegisterOp(OpSchema schema);
// Adds all the schemas or, when one of their types is already registered (or
// repeats among them), none: throws kInvalidArgument naming it.
void RegisterOps(std::vector<OpSchema> schemas);
// Adds a kernel for another kind of place to an op registered elsewhere (a
// device's kernels live beside the CPU ones, in files of their own). Either
// may register first: a kernel for a type not registered yet is attached
// when it is. Throws kInvalidArgument when the op has a kernel for `place`.
bool RegisterKernel(const std::string& type, Place::Kind place, KernelFn fn);
// nullptr when the type is unknown.
const OpSchema* FindOpSchema(const std::string& type);
// Throws kNotFound naming the type when unknown.
const OpSchema& GetOpSchema(const std::string& type);
std::vector<std::string> RegisteredOpTypes();

}  // namespace rill

#define RILL_REGISTER_OP(name, schema) \
  [[maybe_unused]] static const bool rill_registered_op_##name = ::rill::RegisterOp(schema)

// RILL_REGISTER_KERNEL(relu, Cuda, ReluCudaKernel): op `name`'s kernel for
// Place::Kind::k<kind>.
#define RILL_REGISTER_KERNEL(name, kind, fn)                                  \
  [[maybe_unused]] static const bool rill_registered_##kind##_kernel_##name = \
      ::rill::RegisterKernel(#name, ::rill::Place::Kind::k##kind, fn)
