#include "actors/distributed/pserver_checkpoint.h"

#include <sys/stat.h>

#include "rill/checkpoint.h"
#include "rill/error.h"
#include "rill/scope.h"

namespace rill {

void SavePserverCheckpoint(const proto::ProgramDesc& program, const Scope& scope, int64_t step,
                           const std::string& path) {
  SaveCheckpoint(program, scope, path, step);
}

bool PserverCheckpointExists(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

int64_t LoadPserverCheckpoint(const proto::ProgramDesc& program, Scope* scope,
                              const std::string& path) {
  const int64_t step = LoadCheckpoint(program, scope, path);
  RILL_CHECK(step >= 0, kParse, path, ": not a parameter-server checkpoint (it has no step)");
  return step;
}

}  // namespace rill
