// BlockRunner: the block actor of a parallel_do (or parallel_do_grad) op in
// an actor graph. Start() splits the op's inputs along dim 0 over the places,
// runs the op's sub-block on every place as a nested actor graph, counts the
// places down as they finish (a wait-group of N) and, when the last one is
// done, merges what they produced: concatenated outputs (and input
// gradients), summed parameter gradients. Nothing blocks a thread meanwhile.
//
// Each place has a scope of its own (a child of the op's scope), kept from run
// to run: the gradient op runs its block in the scopes its forward op left,
// where the forward values are. One run at a time per runner.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rill/proto/program.pb.h"
#include "rill/runtime.h"
#include "rill/scope.h"
#include "rill/trace_recorder.h"

namespace rill {

class ActorGraph;

class BlockRunner {
 public:
  // Whether ops of this type run through a BlockRunner.
  static bool Handles(const std::string& type);

  // For op `op` of `program`, reading and writing `outer`, on `place_scopes`
  // (children of `outer`, one per place, shared with the runner of the
  // matching forward or gradient op). Builds the places' graphs, traced into
  // `trace` (if any) under the op's lane `trace_lane`.
  BlockRunner(Runtime* runtime, const proto::ProgramDesc& program, const proto::OpDesc& op,
              Scope* outer, const std::vector<Scope*>& place_scopes,
              std::shared_ptr<TraceRecorder> trace = nullptr, int trace_lane = -1);
  ~BlockRunner();
  BlockRunner(const BlockRunner&) = delete;
  BlockRunner& operator=(const BlockRunner&) = delete;

  // Starts a run. `done` is called once, on some thread, after every place has
  // finished and the results are merged, with the first error (or null).
  void Start(std::function<void(std::exception_ptr)> done);

  // Stops the places' graphs (cancelling a run in flight).
  void Shutdown();

  // The variables a runner for `op` makes each place own (so that nothing a
  // place writes lands in the shared outer scope).
  static std::vector<std::string> PlaceLocalVars(const proto::ProgramDesc& program,
                                                 const proto::OpDesc& op);

 private:
  // An output merged into the outer scope: `outer` from each place's `local`.
  struct Merge {
    std::string outer;
    std::string local;
    bool sum = false;  // parameter gradients add up; outputs are concatenated
  };

  void PlaceDone(int place, std::exception_ptr error);
  void MergeOutputs();

  const int places_;
  Scope* outer_;
  std::vector<Scope*> place_scopes_;
  std::vector<std::string> split_;  // variables sliced over the places
  std::vector<Merge> merges_;
  std::vector<std::shared_ptr<ActorGraph>> graphs_;   // one per place
  std::vector<std::vector<std::string>> feed_names_;  // by place: the graph's feed variables
  std::atomic<int> pending_{0};
  std::vector<int64_t> done_ns_;  // by place: when it finished (traced runs)
  std::mutex mutex_;
  std::exception_ptr error_;  // guarded by mutex_
  std::function<void(std::exception_ptr)> done_;
};

}  // namespace rill
