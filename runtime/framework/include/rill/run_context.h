// RunContext: what a kernel can reach of the run it is part of, beyond its own
// op — the program (to run a sub-block), and the run's concurrency: `go`
// blocks started by the run, and what must be closed if the run fails so that
// nothing stays parked on a channel. Each executor supplies its own: the
// reference executor runs go blocks on threads, the actor executor on fibers.
//
// A run is structured: it ends only after every go block it started has
// ended, and the first error of any of them is the run's error.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include "rill/proto/program.pb.h"

namespace rill {

class RunContext {
 public:
  virtual ~RunContext() = default;

  virtual const proto::ProgramDesc& program() const = 0;

  // Starts `body` concurrently with the rest of the run. `what` names it in
  // errors ("block 1 (go, op 3 of block 0)"). A throwing body fails the run.
  virtual void Go(std::string what, std::function<void()> body) = 0;

  // `closer` runs once if the run fails or is cancelled (a channel's Close),
  // so that ops parked on what it closes return. Called from any thread.
  virtual void OnFailure(std::function<void()> closer) = 0;

  // An op of a sub-block ended (progress, for stall detection).
  virtual void Progress() {}
};

// Runs a go block's `body`. Returns null when it ends normally, else what it
// threw as a rill::Error whose message starts with `what` (the block's name).
std::exception_ptr RunGoBody(const std::string& what, const std::function<void()>& body);

}  // namespace rill
