// A parameter server's checkpoints: the persistable variables of its program
// (parameter slices, optimizer state, counters) with the step it completed,
// in rill/checkpoint.h's format. It keeps the last two: the newest at `path`,
// the one before at `path.prev`, so that servers killed at different steps
// can all go back to one step they share (distributed.md, "Checkpoints").
// Used by the server's actor alone: not thread-safe.
//
//   PserverCheckpoints files(main, startup, "/ckpt/pserver0.ckpt");  // checks both files
//   files.steps();             // {40, 30}: where this server can start from
//   files.Resume(30, &scope);  // the values of step 30; the file of step 40 is removed
//   files.Save(scope, 40);     // 30 becomes the previous, 40 the newest
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/proto/program.pb.h"

namespace rill {

class Scope;

class PserverCheckpoints {
 public:
  // Finds the checkpoints of `path`, checks each against `program` (format,
  // checksum, variables and shapes, a step, the previous older than the
  // newest) and loads the newest into `scope` (the startup values are there
  // already). Throws rill::Error naming the file and what failed.
  PserverCheckpoints(const proto::ProgramDesc& program, const proto::ProgramDesc& startup,
                     std::string path, Scope* scope);

  // The steps this server can start from, newest first: its checkpoints, and
  // the startup values (step 0) while it has fewer than two.
  std::vector<int64_t> steps() const;
  // The file holding the checkpoint of `step` ("the startup values" for 0
  // without one), for messages.
  std::string Describe(int64_t step) const;
  // Puts the values of `step` (one of steps()) into `scope` and removes the
  // checkpoints newer than it: the job goes on from that step, and what it did
  // after is redone. Throws naming the file on a failure.
  void Resume(int64_t step, Scope* scope);
  // Saves `scope` as the checkpoint of `step` (written to PATH.next, then
  // renamed into place); the newest so far becomes the previous, the one
  // before that is dropped. Throws kIo naming the file.
  void Save(const Scope& scope, int64_t step);

 private:
  struct File {
    std::string path;
    int64_t step = 0;
  };

  const proto::ProgramDesc& program_;  // the server's, which outlives this
  const proto::ProgramDesc& startup_;
  const std::string path_, previous_path_, next_path_;  // PATH, PATH.prev, PATH.next
  std::vector<File> files_;                             // newest first, at most two
  int64_t loaded_step_ = 0;  // whose values the scope holds (0: the startup values)
};

}  // namespace rill
