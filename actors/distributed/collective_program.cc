// PrepareCollective (rill/process_group.h): what a rank does before its
// executor runs a collective data-parallel program.
#include "rill/error.h"
#include "rill/process_group.h"
#include "runtime/graph/data_parallel.h"

namespace rill {

proto::ProgramDesc PrepareCollective(std::shared_ptr<ProcessGroup> group,
                                     const proto::ProgramDesc& program, Scope* scope,
                                     const BuildStrategy& build, int block_index) {
  RILL_CHECK(group != nullptr, kInvalidArgument, "PrepareCollective needs a process group");
  BroadcastPersistables(*group, program, scope);
  ProcessGroup::Install(scope, group);
  return AddProcessAllreduce(program, block_index, build.process_fuse_bytes,
                             build.gradient_compression);
}

}  // namespace rill
