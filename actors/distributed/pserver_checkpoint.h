// A parameter server's checkpoint: the persistable variables of its program
// (parameter slices, optimizer state, counters) and the step it completed,
// in one file written atomically (rill/checkpoint.h's format, the step in its header).
#pragma once

#include <cstdint>
#include <string>

#include "rill/proto/program.pb.h"

namespace rill {

class Scope;

void SavePserverCheckpoint(const proto::ProgramDesc& program, const Scope& scope, int64_t step,
                           const std::string& path);
bool PserverCheckpointExists(const std::string& path);
// Restores the variables into `scope`, returns the step. Throws naming the
// path and the variable when the file does not match the program.
int64_t LoadPserverCheckpoint(const proto::ProgramDesc& program, Scope* scope,
                              const std::string& path);

}  // namespace rill
