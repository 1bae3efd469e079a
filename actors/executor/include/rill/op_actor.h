// Custom op actors: ops whose execution is a protocol of their own — one that
// waits on something outside, keeps state across iterations, streams partial
// results or talks to a service — run as an actor the executor spawns for the
// op's node, instead of as a kernel on a stream. The actor speaks the same
// readiness protocol as every op: when the op's inputs are ready in an
// iteration, the executor sends it a message; it reads its inputs and writes
// its outputs through the KernelContext and says done; the op's successors
// are then released. It is traced like other ops (its lane, its span, its
// messages).
//
//   class NormWatch : public OpActor {
//     void Run(KernelContext& ctx, OpDone done) override {
//       sum_ += SquaredNorm(ctx.Input("X"));      // state kept across iterations
//       done(nullptr);                            // or later, from another thread
//     }
//     double sum_ = 0;
//   };
//   RegisterOpActor("norm_watch", [] { return std::make_unique<NormWatch>(); });
//
// The op's schema (slots, attributes, shape inference, no kernel needed) is
// registered as for any op. One actor per op node (per place); it handles its
// messages one at a time, so Run is never called concurrently for one node.
// `done` must be called once per Run (a second call is ignored), with an error
// to fail the iteration; Run throwing counts as done with that error. The
// reference executor cannot run such an op and says so (it has no kernel).
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "rill/kernel_context.h"

namespace rill {

using OpDone = std::function<void(std::exception_ptr error)>;

class OpActor {
 public:
  virtual ~OpActor() = default;
  virtual void Run(KernelContext& ctx, OpDone done) = 0;
};

using OpActorFactory = std::function<std::unique_ptr<OpActor>()>;

// Ops of `type` run as actors made by `factory` in executors built from now on.
// Throws kInvalidArgument if the type already has one.
void RegisterOpActor(const std::string& type, OpActorFactory factory);
// Removes it (tests); executors already built keep their actors.
void UnregisterOpActor(const std::string& type);
// nullptr when ops of `type` run their kernel.
std::shared_ptr<const OpActorFactory> FindOpActor(const std::string& type);

}  // namespace rill
