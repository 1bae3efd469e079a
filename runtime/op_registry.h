// The process-wide table of op schemas, filled by RILL_REGISTER_OP at static
// initialisation. Lookups are safe from any thread once main() has started.
#pragma once

#include <string>
#include <vector>

#include "runtime/op_schema.h"

namespace rill {

// Adds a schema; throws kInvalidArgument if the type is already registered.
bool RegisterOp(OpSchema schema);
// Adds all the schemas or, when one of their types is already registered (or
// repeats among them), none: throws kInvalidArgument naming it.
void RegisterOps(std::vector<OpSchema> schemas);
// nullptr when the type is unknown.
const OpSchema* FindOpSchema(const std::string& type);
// Throws kNotFound naming the type when unknown.
const OpSchema& GetOpSchema(const std::string& type);
std::vector<std::string> RegisteredOpTypes();

}  // namespace rill

#define RILL_REGISTER_OP(name, schema) \
  [[maybe_unused]] static const bool rill_registered_op_##name = ::rill::RegisterOp(schema)
